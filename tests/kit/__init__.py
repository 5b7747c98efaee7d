"""What the tests share: the in-memory Kubernetes API (`kit.fake_kube`, `kit.cluster`,
`kit.aio`), the golden-file comparison (`kit.golden`) and waiting on a real cluster
(`kit.waiting`: `wait_until`, `retry_api`, also used by `bench/faults.py`)."""
