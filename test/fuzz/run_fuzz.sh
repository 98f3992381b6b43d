#!/usr/bin/env bash
# usage: run_fuzz.sh FUZZER CORPUS_DIR SECONDS
# Runs one libFuzzer harness for SECONDS on the corpus kept in the repository (read-only: new
# inputs go to a scratch directory) and fails on any crash, sanitizer report or leak. A finding is
# saved as crash-*/leak-*/timeout-* in the current directory: add it to the corpus once fixed.
set -eu
fuzzer=$1
corpus=$2
seconds=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/inputs" "$scratch/tmp"
# rss_limit: inputs are small, and the readers bound every allocation by the input size.
# TMPDIR: the harnesses' scratch files go there, and must be gone when the fuzzer exits.
TMPDIR="$scratch/tmp" "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
  -timeout=10 -print_final_stats=1 "$scratch/inputs" "$corpus"
left=$(ls -A "$scratch/tmp")
if [ -n "$left" ]; then
  echo "run_fuzz.sh: $(basename "$fuzzer") left scratch files behind: $left" >&2
  exit 1
fi
