#!/usr/bin/env bash
# Builds the ppc64le (pseries and powernv) pieces of the petitboot path
# from Debian ppc64el packages:
#   ppc64le-netboot.sh kernel  OUT   Debian's ppc64el kernel (vmlinux, ELF)
#   ppc64le-netboot.sh netboot|netboot-opal OUT   the netboot initramfs (for
#       pseries; netboot-opal for powernv, with ipmitool), standing in for
#       petitboot: it follows the BMC's boot device override for this start,
#       else the boot order the BMC's boot initiator mailbox gives, else its
#       own order: disk, then network. On powernv (OPAL gives the host an
#       IPMI channel to its BMC: ipmi_powernv, /dev/ipmi0) it reads the
#       override as petitboot's powerpc platform does: Get System Boot
#       Options parameter 5 (8 bytes, completion code 0, version 1, not
#       locked, boot flag valid; persistent: data 1 bit 6; device: data 2
#       bits 5:2), clears a one-time override after honouring it (parameter
#       5 set to "valid, no override") and reads the mailbox (parameter 7,
#       16-byte blocks: IANA 02 00 00, then "petitboot,bootdevs=..."), with
#       Debian's ipmitool. On pseries (no IPMI there) the override comes as
#       shoal.bootdev=network|disk|cdrom on its command line.
#       Disk: a disk whose first sector starts "SHOAL-DISK-OS <name>" stands
#       for an installed OS ("petitboot: booting from disk ...", then
#       "SHOAL-MARKER disk-os <name>"). Network: DHCPv4 asking for options
#       209/210 (busybox udhcpc), else DHCPv6 asking for option 59 (dhcpcd:
#       Debian's busybox has no udhcpc6); pb-discover (petitboot's discovery, see petitboot/README.md) and
#       kexec.
#   ppc64le-netboot.sh payload OUT   the instance/deploy payload initramfs:
#       prints "SHOAL-MARKER ppc64le-payload" and "SHOAL-CMDLINE <cmdline>",
#       takes DHCP, POSTs a heartbeat to http://<DHCP server>:8080/heartbeat
#       and powers off
# The console is hvc0. Needs apt with the ppc64el architecture added (dpkg
# --add-architecture ppc64el; ci/test does it), cpio and depmod (kmod).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kind=${1:?kernel|netboot|netboot-opal|payload} out=${2:?output file}
# netboot-opal: the netboot initramfs for OPAL (powernv) machines, plus
# the IPMI drivers and Debian's ppc64el ipmitool with its libraries
# (5 MB), which pseries, with no IPMI channel, has no use for.
opal=''
if [[ $kind == netboot-opal ]]; then opal=1 kind=netboot; fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# The kernel of Debian's point release (suite bookworm/main): one version
# for every run, whatever bookworm-security or -backports carry. kexec
# under QEMU TCG used to hang now and then, more often with some kernels
# than others; the cause was the copy overwriting the running task, which
# the kexec window (pb-discover, crashkernel= on the netboot kernel's
# command line) now rules out (ARCHITECTURE.md).
point_release() {
    apt-cache madison linux-image-powerpc64le:ppc64el 2>/dev/null |
        awk -F' *[|] *' '$3 ~ / bookworm\/main / {print $2; exit}'
}
resolve() {
    local v
    v=$(point_release)
    [[ -n $v ]] || return 0
    apt-cache depends "linux-image-powerpc64le:ppc64el=$v" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}
kpkg=$(resolve)
if [[ -z $kpkg && $EUID -eq 0 ]]; then
    apt-get update -qq </dev/null >/dev/null 2>&1 || true
    kpkg=$(resolve)
fi
[[ -n $kpkg ]] || { echo "ppc64le-netboot.sh: cannot resolve linux-image-powerpc64le:ppc64el in bookworm/main (dpkg --add-architecture ppc64el; apt-get update)" >&2; exit 1; }
kpkg=${kpkg%:ppc64el}
kver=${kpkg#linux-image-}
get() {  # PACKAGE...: download the ppc64el packages and unpack them into pkgs/
    apt-get download -q "${@/%/:ppc64el}" >/dev/null 2>&1 || { echo "ppc64le-netboot.sh: apt-get download $* failed" >&2; exit 1; }
    for p in "$@"; do dpkg -x ./"${p}"_*_ppc64el.deb pkgs; done
}

if [[ $kind == kernel ]]; then
    get "$kpkg"
    cp "pkgs/boot/vmlinux-$kver" "$out"
    exit 0
fi
[[ $kind == netboot || $kind == payload ]] || { echo "ppc64le-netboot.sh: unknown kind $kind" >&2; exit 2; }

get "$kpkg" busybox-static
mods=pkgs/lib/modules/$kver
depmod -b pkgs "$kver"  # the package ships no modules.dep
mkdir -p root/bin root/mods root/lib64 root/lib/powerpc64le-linux-gnu
cp pkgs/bin/busybox root/bin/busybox
# The NICs: ibmveth (spapr-vlan, libvirt's default on pseries), virtio-net,
# and e1000e (a PCIe NIC for powernv machines), with their dependencies.
copy_modules "$mods" root/mods ibmveth virtio_pci virtio_net e1000e
[[ $kind == payload ]] || copy_modules "$mods" root/mods virtio_blk
[[ -z $opal ]] || copy_modules "$mods" root/mods ipmi_devintf ipmi_powernv

# What both initramfs share: mounts, modules, DHCP on the first NIC.
cat >root/common.sh <<'SH'
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
# The IPMI drivers only where OPAL gives the host an IPMI channel
# (powernv): a pseries guest keeps the kernel state its kexec was
# measured with.
while read -r m; do
    case $m in ipmi_*) [ -d /proc/device-tree/ibm,opal ] || continue ;; esac
    insmod "/mods/$m" 2>/dev/null
done </mods/order
ip link set lo up
iface=''
for i in 1 2 3 4 5 6 7 8 9 10; do
    for n in /sys/class/net/*; do
        case ${n##*/} in lo|sit*|tunl*) ;; *) iface=${n##*/}; break 2 ;; esac
    done
    sleep 0.5
done
SH
cat >root/udhcpc.sh <<'SH'
#!/bin/busybox sh
# Saves the lease for /init and configures the interface.
case "$1" in
    bound|renew)
        ip addr add "$ip/${mask:-24}" dev "$interface"
        export -p | grep -E " (interface|ip|mask|siaddr|serverid|tftp|boot_file|bootfile|pxeconffile|pxepathprefix|reboottime)=" >/tmp/lease.part
        mv /tmp/lease.part /tmp/lease ;;
esac
SH

if [[ $kind == netboot ]]; then
    get kexec-tools libc6 dhcpcd-base
    cp pkgs/sbin/kexec root/bin/kexec
    if [[ -n $opal ]]; then
        get ipmitool libfreeipmi17 libgcrypt20 libgpg-error0 libreadline8 libssl3 libtinfo6
        cp pkgs/usr/bin/ipmitool root/bin/ipmitool
        for l in libm.so.6 libfreeipmi.so.17 libgcrypt.so.20 libgpg-error.so.0 libreadline.so.8 libssl.so.3 libcrypto.so.3 libtinfo.so.6; do
            f=$(find pkgs/lib pkgs/usr/lib -name "$l" | head -n 1)
            [[ -n $f ]] || { echo "ppc64le-netboot.sh: $l not in the ppc64el packages" >&2; exit 1; }
            cp -L "$f" root/lib/powerpc64le-linux-gnu/
        done
    fi
    cp pkgs/usr/sbin/dhcpcd root/bin/dhcpcd
    # dhcpcd drops privileges to this user (privsep) and keeps its DUID here.
    mkdir -p root/etc root/var/lib/dhcpcd root/run/dhcpcd root/usr/lib/dhcpcd
    echo 'root:x:0:0:root:/:/bin/sh' >root/etc/passwd
    echo 'dhcpcd:x:100:65534:dhcpcd:/usr/lib/dhcpcd:/bin/false' >>root/etc/passwd
    echo 'root:x:0:' >root/etc/group
    : >root/etc/dhcpcd.conf
    cat >root/dhcpcd.sh <<'HOOK'
#!/bin/busybox sh
# dhcpcd's hook: saves a DHCPv6 lease for /init, named as udhcpc6 names it.
case "$reason" in
    BOUND6|REBOOT6)
        {
            echo "export interface='$interface'"
            echo "export ipv6='${new_dhcp6_ia_na1_ia_addr1:-}'"
            echo "export bootfile_url='${new_dhcp6_bootfile_url:-}'"
        } >/tmp/lease6.part && mv /tmp/lease6.part /tmp/lease6 ;;
esac
HOOK
    chmod +x root/dhcpcd.sh
    cp -L pkgs/lib/powerpc64le-linux-gnu/libc.so.6 root/lib/powerpc64le-linux-gnu/
    cp -L pkgs/lib/powerpc64le-linux-gnu/ld64.so.2 root/lib/powerpc64le-linux-gnu/
    ln -s ../lib/powerpc64le-linux-gnu/ld64.so.2 root/lib64/ld64.so.2
    cp "$here/petitboot/pb-discover" root/bin/pb-discover
    cp "$here/petitboot/ipmi.sh" root/ipmi.sh
    cat >root/init <<'SH'
#!/bin/busybox sh
. /common.sh
echo "SHOAL-NETBOOT petitboot-compatible discovery on ${iface:-no NIC}"
bootdev=$(sed -n 's/.*shoal\.bootdev=\([a-z]*\).*/\1/p' /proc/cmdline)
order='disk network'
. /ipmi.sh

disk_boot() {  # an installed OS on a disk: its first sector says so
    for b in /sys/block/vd* /sys/block/sd*; do
        [ -e "$b" ] || continue
        dev=/dev/${b##*/}
        [ -e "$dev" ] || mknod "$dev" b $(sed 's/:/ /' "$b/dev")
        os=$(head -c 512 "$dev" 2>/dev/null | tr -d '\000' | sed -n 's/^SHOAL-DISK-OS //p' | head -n 1)
        if [ -n "$os" ]; then
            echo "petitboot: booting from disk $dev: $os"
            echo "SHOAL-MARKER disk-os $os"
            return 0
        fi
    done
    echo "petitboot: no bootable disk"
    return 1
}

net_boot() {
    [ -n "$iface" ] || { echo "petitboot: no network interface"; return 1; }
    ip link set "$iface" up
    # As petitboot's pb-udhcpc: options 209, 210 and 211 asked for by name.
    # Then DHCPv6 asking for the bootfile URL (59), as petitboot's udhcpc6
    # does; only when DHCPv4 gave nothing, since a dhcpcd left running
    # beside the v4 boot made the later kexec hang now and then.
    if udhcpc -i "$iface" -f -q -n -t 6 -T 2 -O pxeconffile -O pxepathprefix -O reboottime -s /udhcpc.sh >/dev/null 2>&1; then
        . /tmp/lease
        echo "petitboot: DHCP lease $ip on $interface from ${serverid:-?}"
    elif dhcpcd -6 -B -1 -t 30 -o dhcp6_bootfile_url -c /dhcpcd.sh "$iface" >/tmp/dhcpcd.log 2>&1 && [ -e /tmp/lease6 ]; then
        . /tmp/lease6
        echo "petitboot: DHCPv6 lease $ipv6 on $interface, bootfile-url ${bootfile_url:-none}"
    else
        echo "petitboot: no DHCP lease on $iface"
        tail -n 5 /tmp/dhcpcd.log | sed 's/^/petitboot: dhcpcd: /'
        return 1
    fi
    sh /bin/pb-discover
    echo "petitboot: boot failed (status $?)"
    return 1
}

case $bootdev in
    network) echo "petitboot: boot device network (set by the BMC)"; net_boot ;;
    disk) echo "petitboot: boot device disk (set by the BMC)"; disk_boot ;;
    cdrom) echo "petitboot: boot device cdrom (set by the BMC): no CD-ROM boot here" ;;
    safe|setup) echo "petitboot: boot device $bootdev (set by the BMC): the menu, no automatic boot" ;;
    *)
        if [ "$order" = 'disk network' ]; then
            echo "petitboot: no boot device override: disk, then network"
        else
            echo "petitboot: no boot device override: boot order $order"
        fi
        for dev in $order; do
            case $dev in
                disk) disk_boot && break ;;
                network) net_boot && break ;;
            esac
        done ;;
esac
poweroff -f
SH
else
    cat >root/init <<'SH'
#!/bin/busybox sh
. /common.sh
echo "SHOAL-MARKER ppc64le-payload"
echo "SHOAL-CMDLINE $(cat /proc/cmdline)"
if [ -n "$iface" ] && ip link set "$iface" up &&
   udhcpc -i "$iface" -f -q -n -t 6 -T 2 -s /udhcpc.sh >/dev/null 2>&1; then
    . /tmp/lease
    if wget -q -O /dev/null --post-data "marker=ppc64le-payload cmdline=$(cat /proc/cmdline)" "http://$serverid:8080/heartbeat"; then
        echo "SHOAL-HEARTBEAT sent"
    else
        echo "SHOAL-HEARTBEAT failed"
    fi
else
    echo "SHOAL-DHCP failed"
fi
poweroff -f
SH
fi
chmod +x root/init root/udhcpc.sh
(cd root && find . | cpio -o -H newc --quiet | gzip -9) >initrd.gz
gzip -t initrd.gz
gzip -dc initrd.gz | cpio -t --quiet | grep -x init >/dev/null || { echo "ppc64le-netboot.sh: initramfs has no /init" >&2; exit 1; }
cp initrd.gz "$out"
