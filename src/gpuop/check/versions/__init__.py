"""The VER rule family: the cluster against the GPU Operator version matrix.

A family of `gpuop.check` like the GPU rules: its codes are in the one registry
(`gpuop.check.families.versions`), its findings go through the one finding log, and
`check_versions` returns the checker's `Report` (wrapped with the release it used), so
`gpuop versions check` prints text, JSON and SARIF through `gpuop check`'s output. The
release comes from `gpuop.check.release`, the ranges from `gpuop.catalog.versions`.

The rules are in `release_rules` (VER0xx), `platform` (VER1xx) and `driver` (VER2xx,
VER3xx); `engine` runs them over the nodes, `parse` reads version strings.

    from gpuop.check.versions.engine import check_versions
    result = check_versions(objects, today=date.today())
"""
