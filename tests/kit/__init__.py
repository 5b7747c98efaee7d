"""What the tests share: the in-memory Kubernetes API (`kit.fake_kube`)."""
