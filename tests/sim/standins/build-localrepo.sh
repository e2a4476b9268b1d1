#!/bin/sh
# SIM STAND-IN: flat apt repositories of packages named and versioned like the real ones, in a simulated host.
#   build-localrepo.sh DIR            the NVIDIA driver (below)
#   build-localrepo.sh DIR kernels    DGX OS kernels and their NVIDIA modules, one repository per case under DIR
#
# driver: stand-in NVIDIA driver packages, named and versioned like Ubuntu's: branch 580 (580.95.05 and 580.142), branch 590
# (590.44.01), and the 580 names once more as transitional packages of 590, the
# way Ubuntu retires a driver branch. Without a pin, `apt upgrade` therefore
# moves a 580 host to 590 and `apt install nvidia-driver-580-open` installs 590.
#
# kernels: flat apt repositories of kernel and NVIDIA module packages named and versioned like DGX OS's,
# for the OS update (playbooks/os_update.yml). Their files live under the simulated host's recorded tree
# (tests/fixtures/gb10, installed at $SIM, SPARKFLEET_SIM_DIR): a kernel package brings $SIM/boot/vmlinuz-<kernel> (and its
# initrd.img-<kernel>), moves the vmlinuz link to the newest kernel, as Ubuntu's linux-update-symlinks does, and
# writes GRUB's menu again (the tree's bin/update-grub stand-in), as the real package's postinst runs update-grub; a module package adds its kernel
# to the answers of the modinfo stand-in ($SIM/bin/modinfo.modules). The module packages come per kernel
# (linux-modules-nvidia-580-open-<kernel>), with a metapackage that follows the kernel metapackage. A host whose
# driver is the DKMS package (nvidia-dkms-580-open, as sparkfleet.gb10.nvidia_driver installs it) gets the module
# built when the kernel's headers are installed: linux-headers-<kernel> stands in for DKMS's autoinstall too.
#
#   base/       what the hosts run: kernel 6.17.0-1014-nvidia with its 580 module (as the GB10 fixture)
#   good/       base + kernel 6.17.0-1016-nvidia; its module package and headers exist, but the module
#               metapackage was not moved (phased): apt's upgrade leaves them out, they are installable by name
#   good2/      good + kernel 6.17.0-1022-nvidia, the same way
#   nomodule/   base + kernel 6.17.0-1018-nvidia, and no module package or headers for it at all
#   knownbad/   base + kernel 7.0.0-1019-nvidia with its module (a kernel field reports name as bad on Sparks)
#   badmodule/  base + kernel 6.17.0-1020-nvidia whose module package and headers install no module for it (a
#               package built for another kernel, a DKMS build that failed): apt is content, and only the proof
#               before the reboot can see it
set -eu
dir=${1:?repository directory}
what=${2:-driver}

# The index apt reads from a flat repository: Packages, Packages.gz and a Release with their sums.
index() { # directory label
    (
        cd "$1"
        : >Packages
        for deb in pool/*.deb; do
            dpkg-deb --field "$deb"
            echo "Filename: $deb"
            echo "Size: $(stat -c %s "$deb")"
            echo "SHA256: $(sha256sum "$deb" | cut -d' ' -f1)"
            echo
        done >>Packages
        gzip -9nc Packages >Packages.gz
        {
            echo "Origin: sparkfleet-test"
            echo "Label: $2"
            echo "Date: $(LC_ALL=C date -Ru)"
            echo "SHA256:"
            for f in Packages Packages.gz; do
                echo " $(sha256sum "$f" | cut -d' ' -f1) $(stat -c %s "$f") $f"
            done
        } >Release
    )
}

if [ "$what" = driver ]; then
    repo=$dir
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

    index "$repo" "NVIDIA stand-in"
    rm -rf "$work"
    exit 0
fi
[ "$what" = kernels ] || { echo "build-localrepo.sh: driver or kernels, not $what" >&2; exit 2; }

out=$dir
SIM=${SPARKFLEET_SIM_DIR:-/opt/sparkfleet-sim}
BRANCH=580
MODULE=580.142
work=$(mktemp -d /var/tmp/kernelrepo.XXXXXX)
trap 'rm -rf "$work"' EXIT

deb() { # repo name version depends [kernel-image|module] [kernel]
    repo=$1 name=$2 version=$3 depends=$4 kind=${5:-meta} kernel=${6:-}
    root=$work/$repo/${name}_$version
    mkdir -p "$root/DEBIAN" "$out/$repo/pool"
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: all"
        echo "Maintainer: sparkfleet.gb10 tests <tests@sparkfleet.invalid>"
        if [ -n "$depends" ]; then echo "Depends: $depends"; fi
        echo "Section: kernel"
        echo "Priority: optional"
        echo "Description: SIM STAND-IN for the DGX OS package of the same name"
        echo " Empty; it moves the simulated host's recorded kernel tree."
    } >"$root/DEBIAN/control"
    case $kind in
    kernel-image)
        mkdir -p "$root$SIM/boot"
        : >"$root$SIM/boot/vmlinuz-$kernel"
        : >"$root$SIM/boot/initrd.img-$kernel" # what update-initramfs makes in the real package's postinst
        for script in postinst postrm; do
            cat >"$root/DEBIAN/$script" <<EOF
#!/bin/sh
set -e
cd $SIM/boot
newest=\$(ls vmlinuz-* 2>/dev/null | sed 's/^vmlinuz-//' | sort -V | tail -n 1)
if [ -n "\$newest" ]; then ln -sfn "vmlinuz-\$newest" vmlinuz; fi
$SIM/bin/update-grub
EOF
            chmod 0755 "$root/DEBIAN/$script"
        done
        ;;
    module-empty | headers-broken) ;;
    headers)
        cat >"$root/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
if dpkg-query --show --showformat '\${db:Status-Abbrev}' nvidia-dkms-$BRANCH-open 2>/dev/null | grep -q '^.i'; then
    grep -qx '$kernel nvidia $MODULE' $SIM/bin/modinfo.modules || echo '$kernel nvidia $MODULE' >>$SIM/bin/modinfo.modules
fi
EOF
        chmod 0755 "$root/DEBIAN/postinst"
        ;;
    module)
        cat >"$root/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
grep -qx '$kernel nvidia $MODULE' $SIM/bin/modinfo.modules || echo '$kernel nvidia $MODULE' >>$SIM/bin/modinfo.modules
EOF
        cat >"$root/DEBIAN/postrm" <<EOF
#!/bin/sh
set -e
sed -i '/^$kernel nvidia /d' $SIM/bin/modinfo.modules
EOF
        chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/postrm"
        ;;
    esac
    dpkg-deb --root-owner-group -Zgzip --build "$root" "$out/$repo/pool/${name}_${version}_all.deb" >/dev/null
}

kernel() { # repo kernel abi-version
    repo=$1 k=$2 v=$3
    deb "$repo" "linux-image-$k" "$v" "" kernel-image "$k"
    deb "$repo" "linux-image-nvidia" "$(echo "$v" | tr - .)" "linux-image-$k (= $v)"
}

module() { # repo kernel abi-version [module|module-empty]
    repo=$1 k=$2 v=$3
    deb "$repo" "linux-modules-nvidia-$BRANCH-open-$k" "$v+$MODULE-0ubuntu1" "linux-image-$k" "${4:-module}" "$k"
}

headers() { # repo kernel abi-version [headers|headers-broken]
    repo=$1 k=$2 v=$3
    deb "$repo" "linux-headers-$k" "$v" "" "${4:-headers}" "$k"
}

module_meta() { # repo kernel abi-version
    repo=$1 k=$2 v=$3
    deb "$repo" "linux-modules-nvidia-$BRANCH-open-nvidia" "$(echo "$v" | tr - .)" \
        "linux-modules-nvidia-$BRANCH-open-$k (= $v+$MODULE-0ubuntu1)"
}

REPOS="base good good2 nomodule knownbad badmodule"
for repo in $REPOS; do
    kernel "$repo" 6.17.0-1014-nvidia 6.17.0-1014.14
    module "$repo" 6.17.0-1014-nvidia 6.17.0-1014.14
    module_meta "$repo" 6.17.0-1014-nvidia 6.17.0-1014.14
done
for repo in good good2; do
    kernel "$repo" 6.17.0-1016-nvidia 6.17.0-1016.16
    module "$repo" 6.17.0-1016-nvidia 6.17.0-1016.16
    headers "$repo" 6.17.0-1016-nvidia 6.17.0-1016.16
done
kernel good2 6.17.0-1022-nvidia 6.17.0-1022.22
module good2 6.17.0-1022-nvidia 6.17.0-1022.22
headers good2 6.17.0-1022-nvidia 6.17.0-1022.22
kernel nomodule 6.17.0-1018-nvidia 6.17.0-1018.18
kernel knownbad 7.0.0-1019-nvidia 7.0.0-1019.19
module knownbad 7.0.0-1019-nvidia 7.0.0-1019.19
headers knownbad 7.0.0-1019-nvidia 7.0.0-1019.19
module_meta knownbad 7.0.0-1019-nvidia 7.0.0-1019.19
kernel badmodule 6.17.0-1020-nvidia 6.17.0-1020.20
module badmodule 6.17.0-1020-nvidia 6.17.0-1020.20 module-empty
headers badmodule 6.17.0-1020-nvidia 6.17.0-1020.20 headers-broken
module_meta badmodule 6.17.0-1020-nvidia 6.17.0-1020.20

for repo in $REPOS; do
    index "$out/$repo" "DGX OS kernel stand-in ($repo)"
done
