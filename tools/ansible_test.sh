#!/usr/bin/env bash
# ansible-test on the collection, without docker: `make sanity` runs
# tools/ansible_test.sh sanity, `make units-ansible-test` runs
# tools/ansible_test.sh units. Further arguments go to ansible-test, e.g.
# tools/ansible_test.sh sanity --test pylint
#
# The layout. ansible-test only runs from a real ansible_collections/<ns>/<name>
# directory and resolves the working directory, so it refuses the symlink
# collections/ansible_collections/sparkfleet/gb10 -> repo top ("No
# ansible_collections parent directory was found"). The collection is copied to
# .cache/sanity/ansible_collections/sparkfleet/gb10 instead: every tracked file
# that exists plus every untracked file git does not ignore, so uncommitted work
# is checked too and a deleted file is gone. The copy (about 8 MB) is made
# afresh each run: safe to run twice.
#
# --local, not --venv or --docker. --docker needs ansible-test's test container
# and no registry is reachable. --venv would make a controller venv under the
# copy's tests/output/ (remade each run, since the copy is) and install
# ansible-core's requirements there; --local runs on the project venv, whose
# ansible-core (2.19.14) and requirements are already pinned in requirements.txt.
# Either way every sanity test with requirements (pylint, pep8, validate-modules,
# yamllint, import, ansible-doc, ...) runs in its own venv with ansible-test's
# pinned versions, made once under ~/.ansible/test/venv from PyPI and reused.
# --python 3.11: the controller's only interpreter; the multi-version tests
# (compile, import) would otherwise report a skip for each missing version.
#
# pip in those venvs. ansible-test makes them --without-pip and bootstraps pip
# with get-pip.py from ci-files.testing.ansible.com, which is not reachable. Its
# message says to save the script to ~/.ansible/test/cache/get_pip_<ver>.py; this
# script saves a stand-in there that does what get-pip.py does (pip install
# --upgrade --force-reinstall pip==<ver>) from pip's wheel, downloaded from PyPI.
set -euo pipefail

command=${1:?usage: tools/ansible_test.sh sanity|units [ansible-test arguments]}
shift
case $command in
  sanity | units) ;;
  *) echo "ansible_test.sh: sanity or units, not $command" >&2; exit 2 ;;
esac

top=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
dest="$top/.cache/sanity/ansible_collections/sparkfleet/gb10"
python_version=${SANITY_PYTHON:-3.11}

# pip version ansible-test bootstraps into its venvs (24.2 for ansible-core 2.19).
pip_version=$(python -c 'import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="'"$python_version"'"))["pip"])')
cache=~/.ansible/test/cache
get_pip="$cache/get_pip_${pip_version//./_}.py"
if ! ls "$cache/pip-$pip_version-"*.whl >/dev/null 2>&1; then
  mkdir -p "$cache"
  python -m pip download -q --no-deps --only-binary :all: -d "$cache" "pip==$pip_version"
fi
if [ ! -f "$get_pip" ]; then  # a real get-pip.py saved there is used as it is
  cat >"$get_pip.tmp" <<EOF
# Stand-in for get-pip-$pip_version.py, written by sparkfleet.gb10's tools/ansible_test.sh
# (ci-files.testing.ansible.com is not reachable): installs pip $pip_version from
# its wheel next to this file, as get-pip.py does with the wheel inside it.
import glob
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, glob.glob(os.path.join(here, 'pip-$pip_version-*.whl'))[0])
from pip._internal.cli.main import main  # noqa: E402

args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
sys.exit(main(['install', '--upgrade', '--force-reinstall', '--no-index', '--find-links', here] + args))
EOF
  mv "$get_pip.tmp" "$get_pip"
fi

# The shellcheck test needs Debian's shellcheck (skipped with a warning without it).
if [ "$command" = sanity ] && ! command -v shellcheck >/dev/null 2>&1; then
  echo "ansible_test.sh: installing shellcheck"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq shellcheck >/dev/null
fi

rm -rf "$dest"
mkdir -p "$dest"
(
  cd "$top"
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do
      if [[ -e $f || -L $f ]]; then printf '%s\0' "$f"; fi
    done |
    tar --null --no-recursion -T - -cf - |
    tar -xf - -C "$dest"
)

cd "$dest"
# ansible-test lists the collection's files with git when it finds a .git at or
# above the collection root; above the copy it would find the project's own
# repository, which ignores .cache/, and list nothing. An empty repository here
# (nothing added or committed) makes it list the copy's files as untracked,
# filtered by the copied .gitignore: the same set as in the project.
git init -q .

if [ "$command" = units ]; then
  # The unit tests run the project venv's ansible and ansible-playbook
  # (<top>/.venv/bin) and the hub client venv `make unit` builds under .cache/:
  # links to both, ignored like the originals, so no test sees a different path.
  ln -s "$top/.venv" .venv
  if [ -d "$top/.cache/hf-client-venv" ]; then
    mkdir -p .cache
    ln -s "$top/.cache/hf-client-venv" .cache/hf-client-venv
  fi
  exec ansible-test units --local --python "$python_version" --color no "$@"
fi
exec ansible-test sanity --local --python "$python_version" --color no "$@"
