#!/usr/bin/env bash
# Runs the real-tool acceptance battery (builds libldplfs.so first). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -p ldplfs
exec python3 -m pytest tests/battery -q -p no:cacheprovider "$@"
