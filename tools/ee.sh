#!/usr/bin/env bash
# `make ee`: the execution environment of execution-environment.yml, built and
# proven. Not part of `make test`.
#
#  1. artifacts: the collection built from this checkout (ansible-galaxy
#     collection build) and its dependency ansible.utils, packed from the one
#     the pinned `ansible` package installed in the venv (Galaxy is not
#     reachable), under build/ee/collections;
#  2. a wheelhouse for Python 3.11 (the base image's) under build/ee/wheels:
#     ansible-core, ansible-runner, ee/requirements.txt and the builder's own
#     tools, at requirements.txt's pins; the image build installs from it only;
#  3. ansible-builder build: context in build/ee/context, image
#     sparkfleet/gb10-ee:latest on the local Debian base image
#     (tools/base-image.sh, `make image`);
#  4. preflight inside the image through ansible-runner: a private data dir
#     build/ee/runner with a playbook importing sparkfleet.gb10.preflight (the
#     collection installed in the image, not this checkout), the example
#     inventory EE_INVENTORY (default inventories/two-spark), and the hosts read
#     from the recorded GB10 fixture as `make preflight` reads them
#     (tests/preflight/offline.yml).
# Each step prints its time. Safe to run twice: step 3 reuses docker's layer
# cache (EE_BUILD_OPTS=--no-cache builds from scratch), and everything under
# build/ee is made afresh.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out="$top/build/ee"
image=${EE_IMAGE:-sparkfleet/gb10-ee:latest}
base=${EE_BASE_IMAGE:-sparkfleet/spark-sim:latest}
inventory=${EE_INVENTORY:-inventories/two-spark}
fixture=${EE_FIXTURE:-nominal}

step_start=$SECONDS
step() { echo "ee: $1 (+$((SECONDS - step_start)) s)"; }

docker image inspect "$base" >/dev/null 2>&1 \
  || { echo "ee: no base image $base: run make image (tools/base-image.sh)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/collections" "$out/wheels"

step "collection artifacts"
ansible-galaxy collection build --force --output-path "$out/collections" >/dev/null
mv "$out"/collections/sparkfleet-gb10-*.tar.gz "$out/collections/sparkfleet-gb10.tar.gz"
utils=$(python3 -c 'import ansible_collections.ansible.utils as m; print(list(m.__path__)[0])')
packing=$(mktemp -d)
trap 'rm -rf "$packing"' EXIT
cp -a "$utils" "$packing/ansible-utils"
find "$packing/ansible-utils" -name __pycache__ -prune -exec rm -rf {} +
# The `ansible` package leaves out files the artifact's FILES.json lists (dotfiles such
# as .isort.cfg), and ansible-galaxy refuses an artifact without them: list what is there.
python3 - "$packing/ansible-utils" <<'PY'
import hashlib, json, os, sys
top = sys.argv[1]
with open(os.path.join(top, "FILES.json")) as handle:
    files = json.load(handle)
files["files"] = [f for f in files["files"] if f["name"] == "." or os.path.lexists(os.path.join(top, f["name"]))]
data = json.dumps(files, indent=4).encode()
with open(os.path.join(top, "FILES.json"), "wb") as handle:
    handle.write(data)
with open(os.path.join(top, "MANIFEST.json")) as handle:
    manifest = json.load(handle)
manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(data).hexdigest()
with open(os.path.join(top, "MANIFEST.json"), "w") as handle:
    json.dump(manifest, handle, indent=4)
PY
# Members named as in a Galaxy artifact (MANIFEST.json, not ./MANIFEST.json).
# shellcheck disable=SC2046  # one tar member per top-level entry: the split is the point
(cd "$packing/ansible-utils" && tar -czf "$out/collections/ansible-utils.tar.gz" $(ls -A))

step "wheelhouse (pip download, Python 3.11)"
# bindep, PyYAML and packaging: ansible-builder's builder stage installs them; dumb-init: its final stage.
pip download -q --only-binary=:all: --python-version 3.11 --platform manylinux_2_17_x86_64 \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform linux_x86_64 \
  -d "$out/wheels" -c requirements.txt \
  ansible-core==2.19.14 ansible-runner==2.4.3 -r ee/requirements.txt \
  bindep==2.14.0 pyyaml packaging dumb-init==1.2.5 2> >(grep -v "^WARNING: Location" >&2)

step "ansible-builder build ($image on $base)"
# shellcheck disable=SC2086  # EE_BUILD_OPTS holds several options, split on purpose
ansible-builder build -f execution-environment.yml -c "$out/context" --container-runtime docker \
  --build-arg EE_BASE_IMAGE="$base" -t "$image" -v 1 ${EE_BUILD_OPTS:-} >"$out/build.log" 2>&1 \
  || { tail -40 "$out/build.log" >&2; exit 1; }

step "preflight in the image through ansible-runner ($inventory, fixture $fixture)"
runner="$out/runner"
mkdir -p "$runner/project" "$runner/env" "$runner/inventory"
cat >"$runner/project/preflight.yml" <<'YAML'
---
# The collection's own playbook, from the collection installed in the image.
- name: Preflight
  ansible.builtin.import_playbook: sparkfleet.gb10.preflight
YAML
cp -a "$inventory"/. "$runner/inventory/"
cp -a "tests/fixtures/gb10/$fixture" "$runner/fixture"
# What the example's comments ask a user to write before a run (its model revisions), after the offline variables.
{ cat tests/preflight/offline.yml; sed '/^---$/d' tests/preflight/example_inputs.yml
  echo "test_fixture_root: /runner/fixture"; } >"$runner/env/extravars"
chmod -R a+rwX "$runner"  # the image runs as uid 1000
set +e
docker run --rm -v "$runner:/runner" "$image" ansible-runner run /runner -p preflight.yml >"$out/preflight.log" 2>&1
rc=$?
set -e
tail -15 "$out/preflight.log"
step "done: preflight rc=$rc (log $out/preflight.log)"
exit $rc
