"""`gpuop completion`: the shell completion script for bash, zsh or fish.

Completion itself is click's: the shell runs `gpuop` with `_GPUOP_COMPLETE` set and gets the
command names, options and choices back. Command modules load only when a word after the
command name is completed, so completing `gpuop <TAB>` stays as quick as `gpuop --help`.
"""

from __future__ import annotations

import sys

import click

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_GPUOP_COMPLETE"


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish.

    \b
      eval "$(gpuop completion bash)"                  # add to ~/.bashrc
      gpuop completion zsh > ~/.zfunc/_gpuop           # with fpath+=(~/.zfunc) in ~/.zshrc
      gpuop completion fish > ~/.config/fish/completions/gpuop.fish
    """
    from click.shell_completion import get_completion_class

    from gpuop.cli import cli

    completer = get_completion_class(shell)
    if completer is None:  # click ships all three; a guard for a trimmed click
        raise click.UsageError(f"no completion for {shell}")
    sys.stdout.write(completer(cli, {}, "gpuop", COMPLETE_VAR).source())


__all__ = ["COMPLETE_VAR", "SHELLS", "completion"]
