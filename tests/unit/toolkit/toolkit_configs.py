"""A hypothesis strategy for containerd config files as people and tools write them.

Each generated file is valid TOML by construction (every table is defined once) and varies in
what matters to a format-preserving editor: config version, indentation style, quote style,
blank lines, comments between and inside tables, a missing final newline, tables out of order,
headerless (implicit) parent tables, runtimes written with headers, dotted keys or inline
tables, existing `nvidia` handlers, `imports`, and unrelated plugins.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

PLUGIN = {
    2: "io.containerd.grpc.v1.cri",
    3: "io.containerd.cri.v1.runtime",
    4: "io.containerd.cri.v1.runtime",
}


@dataclass(frozen=True)
class Style:
    indent: bool
    literal: bool
    blank: str
    comments: bool

    def q(self, value: str) -> str:
        return f"'{value}'" if self.literal else f'"{value}"'

    def header(self, *parts: str) -> str:
        keys = [p if p.replace("-", "").replace("_", "").isalnum() else self.q(p) for p in parts]
        pad = "  " * (len(parts) - 1) if self.indent else ""
        return f"{pad}[{'.'.join(keys)}]"

    def kv(self, depth: int, line: str) -> str:
        return ("  " * depth if self.indent else "") + line


Block = list[str]


def _runtime_blocks(
    draw: st.DrawFn, style: Style, prefix: tuple[str, ...], name: str, depth: int
) -> list[Block]:
    runtime_type = {
        "runc": "io.containerd.runc.v2",
        "crun": "io.containerd.runc.v2",
        "kata": "io.containerd.kata.v2",
        "nvidia": "io.containerd.runc.v2",
    }[name]
    binary = {
        "runc": None,
        "crun": "/usr/bin/crun",
        "kata": None,
        "nvidia": draw(
            st.sampled_from(
                [
                    "/usr/local/nvidia/toolkit/nvidia-container-runtime",
                    "/usr/bin/nvidia-container-runtime",
                ]
            )
        ),
    }[name]
    options: list[str] = []
    if draw(st.booleans()):
        options.append("SystemdCgroup = true")
    if binary is not None:
        options.append(f"BinaryName = {style.q(binary)}")
    layout = draw(st.sampled_from(["header", "dotted", "inline"])) if options else "header"
    path = (*prefix, name)
    main: Block = [style.header(*path)]
    if draw(st.booleans()) or name != "runc":
        main.append(style.kv(depth, f"runtime_type = {style.q(runtime_type)}"))
    if name == "kata":
        main.append(style.kv(depth, "privileged_without_host_devices = true"))
    if style.comments and draw(st.booleans()):
        main.append(style.kv(depth, f"# the {name} runtime"))
    if layout == "dotted":
        main += [style.kv(depth, f"options.{o}") for o in options]
        return [main]
    if layout == "inline":
        main.append(style.kv(depth, f"options = {{ {', '.join(options)} }}"))
        return [main]
    if not options:
        return [main]
    sub: Block = [style.header(*path, "options")]
    sub += [style.kv(depth + 1, o) for o in options]
    if style.comments and draw(st.booleans()):
        sub.append(style.kv(depth + 1, '# BinaryName = "/usr/local/sbin/runc"'))
    return [main, sub]


def _is_cri(block: Block, plugin: str) -> bool:
    header = next((line for line in block if line.strip().startswith("[")), "")
    return plugin in header or header.strip() == "[plugins]"


@st.composite
def containerd_configs(draw: st.DrawFn) -> str:
    """The text of a containerd config.toml (version 2, 3 or 4)."""
    version = draw(st.sampled_from([2, 3, 4]))
    style = Style(
        indent=draw(st.booleans()),
        literal=draw(st.booleans()),
        blank=draw(st.sampled_from(["", "\n", "\n\n"])),
        comments=draw(st.booleans()),
    )
    plugin = PLUGIN[version]
    cri = ("plugins", plugin)
    top: list[str] = []
    if style.comments:
        top.append("# containerd configuration")
    top.append(f"version = {version}")
    if draw(st.booleans()):
        top.append(f"root = {style.q('/var/lib/containerd')}")
    imports = draw(st.sampled_from([None, "[]", "other"]))
    if imports == "[]":
        top.append("imports = []")
    elif imports == "other":
        top.append(f"imports = [{style.q('/etc/containerd/certs/*.toml')}]")
    if draw(st.booleans()):
        top.insert(len(top) - 1, "oom_score = 0" + ("  # default" if style.comments else ""))

    blocks: list[Block] = []
    if draw(st.booleans()):
        blocks.append(
            ["[grpc]", style.kv(1, f"address = {style.q('/run/containerd/containerd.sock')}")]
        )
    if draw(st.booleans()):
        blocks.append(["[plugins]"])
    if draw(st.booleans()):
        cri_block: Block = [style.header(*cri)]
        if draw(st.booleans()):
            cri_block.append(
                style.kv(2, f"enable_cdi = {draw(st.sampled_from(['true', 'false']))}")
            )
        if draw(st.booleans()):
            cri_block.append(
                style.kv(2, f"sandbox_image = {style.q('registry.k8s.io/pause:3.10')}")
            )
        blocks.append(cri_block)

    runtime_names = draw(
        st.lists(st.sampled_from(["runc", "crun", "kata", "nvidia"]), unique=True, max_size=4)
    )
    inline_runtimes = bool(runtime_names) and draw(st.integers(0, 9)) == 0
    if draw(st.booleans()) or inline_runtimes:
        containerd_block: Block = [style.header(*cri, "containerd")]
        default = draw(st.sampled_from([None, "runc", "crun", "kata", "nvidia"]))
        if default is not None:
            containerd_block.append(style.kv(3, f"default_runtime_name = {style.q(default)}"))
        if draw(st.booleans()):
            containerd_block.append(style.kv(3, f"snapshotter = {style.q('overlayfs')}"))
        if inline_runtimes:
            entries = ", ".join(
                f"{n} = {{ runtime_type = {style.q('io.containerd.runc.v2')} }}"
                for n in runtime_names
                if n != "kata"
            )
            containerd_block.append(style.kv(3, f"runtimes = {{ {entries} }}"))
            runtime_names = []
        blocks.append(containerd_block)
    if runtime_names and draw(st.booleans()):
        blocks.append([style.header(*cri, "containerd", "runtimes")])
    for name in runtime_names:
        blocks += _runtime_blocks(draw, style, (*cri, "containerd", "runtimes"), name, 5)
    if draw(st.booleans()):
        registry = "io.containerd.cri.v1.images" if version >= 3 else plugin
        blocks.append(
            [
                *(["# registry settings"] if style.comments else []),
                style.header("plugins", registry, "registry"),
                style.kv(3, f"config_path = {style.q('/etc/containerd/certs.d')}"),
            ]
        )
    if draw(st.booleans()):
        blocks.append(
            [
                style.header("plugins", "io.containerd.gc.v1.scheduler"),
                style.kv(2, "pause_threshold = 0.02"),
            ]
        )

    if draw(st.integers(0, 3)) == 0:
        # Any order at all (valid TOML, but tomlkit misreads some: then gpuop must refuse).
        order = draw(st.permutations(range(len(blocks))))
    else:
        # As people write them: each table after its parent, unrelated tables anywhere.
        related = [i for i, b in enumerate(blocks) if _is_cri(b, plugin)]
        order = related
        for i in (i for i in range(len(blocks)) if i not in related):
            order.insert(draw(st.integers(0, len(order))), i)
    text = "\n".join(top) + "\n"
    for i in order:
        text += style.blank + "\n".join(blocks[i]) + "\n"
    if style.comments and draw(st.booleans()):
        text += "# end of file\n"
    if draw(st.integers(0, 4)) == 0:
        text = text.rstrip("\n")
    return text
