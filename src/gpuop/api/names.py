"""The suffix the API server adds to a `generateName`, as gpuop makes and reads it.

A DaemonSet's pods and a DRA driver's ResourceSlices get names the API server completes
with five characters of apimachinery's `rand.String` alphabet (no vowels, no 0, 1 or 3).
gpuop reads that suffix off a pod's name to find its DaemonSet (`kubectl describe node`
shows pods by name alone) and, where it makes such a name itself (the simulator's pods and
slices), derives the suffix from a key so the same object keeps the same name.
"""

from __future__ import annotations

import hashlib
from typing import Final

# k8s.io/apimachinery/pkg/util/rand
GENERATED_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_SUFFIX_LENGTH: Final = 5
# `-` and the suffix, as a regular expression.
GENERATED_SUFFIX_PATTERN: Final = f"-[{GENERATED_NAME_ALPHABET}]{{{GENERATED_SUFFIX_LENGTH}}}"


def stable_suffix(key: str) -> str:
    """A generateName suffix derived from `key`: the same key, the same suffix."""
    digest = hashlib.sha256(key.encode()).digest()
    alphabet = GENERATED_NAME_ALPHABET
    return "".join(alphabet[b % len(alphabet)] for b in digest[:GENERATED_SUFFIX_LENGTH])


__all__ = [
    "GENERATED_NAME_ALPHABET",
    "GENERATED_SUFFIX_LENGTH",
    "GENERATED_SUFFIX_PATTERN",
    "stable_suffix",
]
