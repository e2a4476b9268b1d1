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
# kernels: flat apt repositories of kernel, NVIDIA module and 580 user-space packages named, versioned and depending
# on each other like DGX OS's (tests/fixtures/apt_simulation/dgxos/README.md), for the OS update (playbooks/os_update.yml).
# Their files live under the simulated host's recorded tree (tests/fixtures/gb10, installed at $SIM,
# SPARKFLEET_SIM_DIR): a kernel package brings $SIM/boot/vmlinuz-<kernel> (and its initrd.img-<kernel>), moves the
# vmlinuz link to the newest kernel, as Ubuntu's linux-update-symlinks does, and writes GRUB's menu again (the tree's
# bin/update-grub stand-in), as the real package's postinst runs update-grub; a module package adds its kernel to the
# answers of the modinfo stand-in ($SIM/bin/modinfo.modules) and depends on the 580 user space it was built for
# (nvidia-kernel-common-580), whose libnvidia-compute-580 changes what the nvidia-smi stand-in reports. Kernels come
# with DGX OS's metapackages of the nvidia-hwe-24.04 flavour (linux-, linux-image-, linux-headers-) and the module's
# (linux-modules-nvidia-580-open-nvidia-hwe-24.04). A host on the DKMS driver gets the module built when the kernel's
# headers are installed: linux-headers-<kernel> stands in for DKMS's autoinstall too.
#
#   base/       the kernel metapackages of what the hosts run: 6.17.0-1014-nvidia (its module: the driver stand-ins)
#   good/       kernel 6.17.0-1016-nvidia, its module and user space 580.159.03: the unit moves as one
#   good2/      kernel 6.17.0-1022-nvidia and its module package, the module metapackage not moved (phased): the
#               upgrade leaves the module out, it is installable by name
#   nomodule/   kernel 6.17.0-1018-nvidia, and no module package for it at all
#   knownbad/   kernel 7.0.0-1019-nvidia with its module (a kernel field reports name as bad on Sparks)
#   badmodule/  kernel 6.17.0-1020-nvidia whose module package installs no module for it (a package built for
#               another kernel): apt is content, and only the proof before the reboot can see it
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

    # Dependencies reconstructed from DGX OS records (tests/fixtures/apt_simulation/dgxos/README.md): the driver
    # metapackage needs the kernel module's common files and source, not DKMS (a Spark runs it without DKMS); the
    # DKMS driver builds from that source.
    branch() { # branch version
        b=$1 v=$2
        build "libnvidia-compute-$b" "$v" "" "NVIDIA libcompute package"
        build "nvidia-utils-$b" "$v" "" "NVIDIA driver support binaries"
        build "nvidia-kernel-common-$b" "$v" "" "NVIDIA kernel module common files"
        build "nvidia-kernel-source-$b-open" "$v" "" "NVIDIA kernel module source (open)"
        build "nvidia-dkms-$b-open" "$v" "nvidia-kernel-source-$b-open (= $v)" "NVIDIA DKMS package (open kernel module)"
        build "nvidia-driver-$b-open" "$v" \
            "libnvidia-compute-$b (= $v), nvidia-utils-$b (= $v), nvidia-kernel-common-$b (= $v), nvidia-kernel-source-$b-open (= $v)" \
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
    # The precompiled module of the simulated Spark's kernel (the GB10 fixture runs 6.17.0-1014-nvidia, and its modinfo
    # stand-in already answers for it) and the metapackage of DGX OS's kernel flavour that brings it.
    k=6.17.0-1014-nvidia
    build "linux-modules-nvidia-580-open-$k" 6.17.0-1014.14+1 "nvidia-kernel-common-580" \
        "Linux kernel nvidia modules for version $k"
    build "linux-modules-nvidia-580-open-nvidia-hwe-24.04" 6.17.0-1014.14+1 \
        "linux-modules-nvidia-580-open-$k (= 6.17.0-1014.14+1)" "Extra drivers for nvidia-580-open for the nvidia-hwe-24.04 flavour"

    index "$repo" "NVIDIA stand-in"
    rm -rf "$work"
    exit 0
fi
[ "$what" = kernels ] || { echo "build-localrepo.sh: driver or kernels, not $what" >&2; exit 2; }

out=$dir
SIM=${SPARKFLEET_SIM_DIR:-/opt/sparkfleet-sim}
BRANCH=580
FLAVOUR=nvidia-hwe-24.04
# The 580 user space the unit moves to (recorded on Sparks, tests/fixtures/apt_simulation/dgxos/README.md record O3);
# the hosts run 580.142 from the driver stand-ins before.
DRIVER=580.159.03
DRIVER_VERSION=$DRIVER-0ubuntu0.24.04.1
work=$(mktemp -d /var/tmp/kernelrepo.XXXXXX)
trap 'rm -rf "$work"' EXIT

deb() { # repo name version depends [meta|kernel-image|headers|module|module-empty|userspace] [kernel]
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
        # a kernel that panics at boot (the boot stand-in reads the mark): nothing apt or the proof can see
        if [ "${PANICS:-}" = "$kernel" ]; then : >"$root$SIM/boot/sim-panics-$kernel"; fi
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
    meta | module-empty) ;;
    headers)
        # DKMS's autoinstall: with the DKMS driver installed, the module of its version is built for this kernel.
        cat >"$root/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
dkms=\$(dpkg-query --show --showformat '\${db:Status-Abbrev} \${Version}' nvidia-dkms-$BRANCH-open 2>/dev/null || true)
case \$dkms in
ii*) v=\$(echo "\$dkms" | sed 's/^[^ ]* *//; s/-.*//')
     grep -qx "$kernel nvidia \$v" $SIM/bin/modinfo.modules || echo "$kernel nvidia \$v" >>$SIM/bin/modinfo.modules ;;
esac
EOF
        chmod 0755 "$root/DEBIAN/postinst"
        ;;
    module)
        cat >"$root/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
sed -i '/^$kernel nvidia /d' $SIM/bin/modinfo.modules
echo '$kernel nvidia $DRIVER' >>$SIM/bin/modinfo.modules
EOF
        cat >"$root/DEBIAN/postrm" <<EOF
#!/bin/sh
set -e
sed -i '/^$kernel nvidia /d' $SIM/bin/modinfo.modules
EOF
        chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/postrm"
        ;;
    userspace)
        # libcuda and NVML of the new version: what nvidia-smi reports from now on (the loaded module stays the
        # old one until the reboot, as on a Spark).
        cat >"$root/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
sed -i 's/^driver_version=.*/driver_version=$DRIVER/' $SIM/bin/nvidia-smi.fields
sed -i 's/NVIDIA-SMI [0-9.]*/NVIDIA-SMI $DRIVER/; s/Driver Version: [0-9.]*/Driver Version: $DRIVER/' $SIM/bin/nvidia-smi.txt
EOF
        chmod 0755 "$root/DEBIAN/postinst"
        ;;
    esac
    dpkg-deb --root-owner-group -Zgzip --build "$root" "$out/$repo/pool/${name}_${version}_all.deb" >/dev/null
}

# A kernel, its headers and the metapackages of DGX OS's flavour at its version.
kernel() { # repo kernel abi-version
    repo=$1 k=$2 v=$3
    deb "$repo" "linux-image-$k" "$v" "" kernel-image "$k"
    deb "$repo" "linux-headers-$k" "$v" "" headers "$k"
    deb "$repo" "linux-image-$FLAVOUR" "$v" "linux-image-$k (= $v)"
    deb "$repo" "linux-headers-$FLAVOUR" "$v" "linux-headers-$k (= $v)"
    deb "$repo" "linux-$FLAVOUR" "$v" "linux-image-$FLAVOUR (= $v), linux-headers-$FLAVOUR (= $v)"
}

# The precompiled module of a kernel, built for the 580 user space it needs ($DRIVER).
module() { # repo kernel abi-version [module|module-empty]
    repo=$1 k=$2 v=$3
    deb "$repo" "linux-modules-nvidia-$BRANCH-open-$k" "$v+1" \
        "linux-image-$k, nvidia-kernel-common-$BRANCH (>= $DRIVER)" "${4:-module}" "$k"
}

# The module metapackage of the flavour, following the kernel metapackages.
module_meta() { # repo kernel abi-version
    repo=$1 k=$2 v=$3
    deb "$repo" "linux-modules-nvidia-$BRANCH-open-$FLAVOUR" "$v+1" "linux-modules-nvidia-$BRANCH-open-$k (= $v+1)"
}

# The 580 user space at $DRIVER, with the driver stand-ins' dependencies.
userspace() { # repo
    repo=$1 v=$DRIVER_VERSION
    deb "$repo" "libnvidia-compute-$BRANCH" "$v" "" userspace
    deb "$repo" "nvidia-utils-$BRANCH" "$v" ""
    deb "$repo" "nvidia-kernel-common-$BRANCH" "$v" ""
    deb "$repo" "nvidia-kernel-source-$BRANCH-open" "$v" ""
    deb "$repo" "nvidia-driver-$BRANCH-open" "$v" "libnvidia-compute-$BRANCH (= $v), nvidia-utils-$BRANCH (= $v), \
nvidia-kernel-common-$BRANCH (= $v), nvidia-kernel-source-$BRANCH-open (= $v)"
}

# base: the running kernel and its metapackages (its module comes from the driver stand-ins)
kernel base 6.17.0-1014-nvidia 6.17.0-1014.14
# good: kernel, module and 580 user space move as one (DGX OS's unit)
kernel good 6.17.0-1016-nvidia 6.17.0-1016.16
module good 6.17.0-1016-nvidia 6.17.0-1016.16
module_meta good 6.17.0-1016-nvidia 6.17.0-1016.16
userspace good
# good2: the kernel moves while the module metapackage is phased; the module is installable by name
kernel good2 6.17.0-1022-nvidia 6.17.0-1022.22
module good2 6.17.0-1022-nvidia 6.17.0-1022.22
# nomodule: a kernel without any module package
kernel nomodule 6.17.0-1018-nvidia 6.17.0-1018.18
# knownbad: a kernel a field reports as bad on Sparks, with its module
kernel knownbad 7.0.0-1019-nvidia 7.0.0-1019.19
module knownbad 7.0.0-1019-nvidia 7.0.0-1019.19
module_meta knownbad 7.0.0-1019-nvidia 7.0.0-1019.19
# badmodule: a module package that installs no module for its kernel (built for another): apt is content, and only
# the proof before the reboot can see it
kernel badmodule 6.17.0-1020-nvidia 6.17.0-1020.20
module badmodule 6.17.0-1020-nvidia 6.17.0-1020.20 module-empty
module_meta badmodule 6.17.0-1020-nvidia 6.17.0-1020.20

# panics: kernel, module and metapackages a proof accepts, and a kernel that panics at boot (os_update_boot_once's
# fallback to GRUB's default)
PANICS=6.17.0-1024-nvidia
kernel panics 6.17.0-1024-nvidia 6.17.0-1024.24
PANICS=
module panics 6.17.0-1024-nvidia 6.17.0-1024.24
module_meta panics 6.17.0-1024-nvidia 6.17.0-1024.24

for repo in base good good2 nomodule knownbad badmodule panics; do
    index "$out/$repo" "DGX OS kernel stand-in ($repo)"
done
