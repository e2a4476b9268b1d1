#!/bin/sh
# Builds a flat apt repository of stand-in NVIDIA driver packages, named and
# versioned like Ubuntu's: branch 580 (580.95.05 and 580.142), branch 590
# (590.44.01), and the 580 names once more as transitional packages of 590, the
# way Ubuntu retires a driver branch. Without a pin, `apt upgrade` therefore
# moves a 580 host to 590 and `apt install nvidia-driver-580-open` installs 590.
set -eu
repo=${1:?repository directory}
work=$(mktemp -d /var/tmp/localrepo.XXXXXX)
mkdir -p "$repo/pool"

build() { # name version depends description
    name=$1 version=$2 depends=$3 desc=$4
    root=$work/${name}_$version
    mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$name"
    printf '%s %s\n' "$name" "$version" >"$root/usr/share/doc/$name/driver-version"
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: all"
        echo "Maintainer: sparkfleet.gb10 tests <tests@sparkfleet.invalid>"
        if [ -n "$depends" ]; then echo "Depends: $depends"; fi
        echo "Section: restricted/libs"
        echo "Priority: optional"
        echo "Description: $desc"
        echo " Empty stand-in for the NVIDIA package of the same name and version."
    } >"$root/DEBIAN/control"
    dpkg-deb --root-owner-group -Zgzip --build "$root" "$repo/pool/${name}_${version}_all.deb" >/dev/null
}

branch() { # branch version
    b=$1 v=$2
    build "libnvidia-compute-$b" "$v" "" "NVIDIA libcompute package"
    build "nvidia-utils-$b" "$v" "" "NVIDIA driver support binaries"
    build "nvidia-dkms-$b-open" "$v" "" "NVIDIA DKMS package (open kernel module)"
    build "nvidia-driver-$b-open" "$v" \
        "libnvidia-compute-$b (= $v), nvidia-utils-$b (= $v), nvidia-dkms-$b-open (= $v)" \
        "NVIDIA driver metapackage (open kernel module)"
}

branch 580 580.95.05-0ubuntu1
branch 580 580.142-0ubuntu1
branch 590 590.44.01-0ubuntu1
t=590.44.01-0ubuntu1
for name in libnvidia-compute nvidia-utils; do
    build "$name-580" "$t" "$name-590 (= $t)" "Transitional package for $name-590"
done
for name in nvidia-dkms nvidia-driver; do
    build "$name-580-open" "$t" "$name-590-open (= $t)" "Transitional package for $name-590-open"
done

cd "$repo"
: >Packages
for deb in pool/*.deb; do
    {
        dpkg-deb --field "$deb"
        echo "Filename: $deb"
        echo "Size: $(stat -c %s "$deb")"
        echo "SHA256: $(sha256sum "$deb" | cut -d' ' -f1)"
        echo
    } >>Packages
done
gzip -9nc Packages >Packages.gz
{
    echo "Origin: sparkfleet-test"
    echo "Label: NVIDIA stand-in"
    echo "Date: $(LC_ALL=C date -Ru)"
    echo "SHA256:"
    for f in Packages Packages.gz; do
        echo " $(sha256sum "$f" | cut -d' ' -f1) $(stat -c %s "$f") $f"
    done
} >Release
rm -rf "$work"
