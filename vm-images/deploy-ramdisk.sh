#!/usr/bin/env bash
# Builds a small Linux "deploy ramdisk" ISO for x86_64 UEFI machines from
# Debian packages: Debian's kernel (linux-image-amd64) and busybox-static,
# booted by grub from the ISO. Its /init prints
#   SHOAL-MARKER deploy-ramdisk
#   SHOAL-CMDLINE <kernel command line>
#   SHOAL-BOOTPATH uefi-http | uefi-cd | uefi | bios   (from BootCurrent)
#   SHOAL-BIOS version=<SMBIOS BIOS version> date=<its date>
# on the serial port, takes DHCP, POSTs a heartbeat (marker, boot path,
# command line) to http://<DHCP server>:8080/heartbeat, like an agent
# would, and powers off.
#   deploy-ramdisk.sh iso OUT.iso
#   deploy-ramdisk.sh kernel OUT      (the kernel alone, for network boot)
#   deploy-ramdisk.sh initrd OUT      (the initramfs alone)
#   deploy-ramdisk.sh iso-ipmi OUT.iso
# The -ipmi variant also carries the IPMI drivers (ipmi_si, ipmi_devintf)
# and the host's ipmitool with its libraries: over /dev/ipmi0 it prints
#   SHOAL-IPMI <ipmitool chassis bootparam get 5, chassis power status>
#   SHOAL-IPMI guid <Get System GUID> smbios <the SMBIOS UUID> (and
#   "SHOAL-IPMI guid matches" when they are the same)
# and then powers the machine off through its BMC (ipmitool chassis power
# off) instead of by itself.
# Needs apt (to fetch the kernel package), busybox-static, cpio, grub-common,
# grub-efi-amd64-bin, xorriso, mtools; ci/test installs them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kind=${1:?iso, kernel or initrd} out=${2:?output file}
[[ $kind == @(iso|kernel|initrd|iso-ipmi) ]] || { echo "deploy-ramdisk.sh: 'iso', 'kernel', 'initrd' or 'iso-ipmi', not '$kind'" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

resolve() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'; }
kpkg=$(resolve)
if [[ -z $kpkg && $EUID -eq 0 ]]; then
    apt-get update -qq </dev/null >/dev/null 2>&1 || true  # package lists may be absent
    kpkg=$(resolve)
fi
[[ -n $kpkg ]] || { echo "deploy-ramdisk.sh: cannot resolve linux-image-amd64 (run apt-get update)" >&2; exit 1; }
apt-get download -q "$kpkg" >/dev/null 2>&1 || { echo "deploy-ramdisk.sh: apt-get download $kpkg failed" >&2; exit 1; }
dpkg -x ./"$kpkg"_*.deb kernel
kver=${kpkg#linux-image-}
mods=kernel/lib/modules/$kver
depmod -b kernel "$kver"  # the package ships no modules.dep

mkdir -p root/bin root/mods iso/boot/grub
cp /bin/busybox root/bin/busybox
# virtio NICs, SATA CD-ROMs and efivarfs, with their dependencies, in load order.
copy_modules "$mods" root/mods virtio_pci virtio_net ahci sr_mod efivarfs
if [[ $kind == iso-ipmi ]]; then
    copy_modules "$mods" root/mods ipmi_si ipmi_devintf
    # The host's ipmitool (ci/test installs it) with the libraries it links.
    ipmitool=$(command -v ipmitool) || { echo "deploy-ramdisk.sh: ipmitool is missing (Debian package ipmitool)" >&2; exit 1; }
    mkdir -p root/usr/bin
    cp "$ipmitool" root/usr/bin/ipmitool
    for lib in $(ldd "$ipmitool" | awk '/=> \// {print $3} /^\t\// {print $1}'); do
        mkdir -p "root$(dirname "$lib")"
        cp -L "$lib" "root$lib"
    done
fi

cat >root/udhcpc.sh <<'SH'
#!/bin/busybox sh
case "$1" in
    bound|renew)
        ip addr add "$ip/${mask:-24}" dev "$interface"
        echo "ip=$ip serverid=$serverid" >/tmp/dhcp ;;
esac
SH
cat >root/init <<'SH'
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "SHOAL-MARKER deploy-ramdisk"
cmdline=$(cat /proc/cmdline)
echo "SHOAL-CMDLINE $cmdline"
echo "SHOAL-BIOS version=$(cat /sys/class/dmi/id/bios_version 2>/dev/null) date=$(cat /sys/class/dmi/id/bios_date 2>/dev/null)"
while read -r m; do insmod "/mods/$m" 2>/dev/null; done </mods/order
bootpath=bios
g=8be4df61-93ca-11d2-aa0d-00e098032b8c
if [ -d /sys/firmware/efi ]; then
    bootpath=uefi
    mount -t efivarfs efivarfs /sys/firmware/efi/efivars 2>/dev/null
    cur=$(od -An -tx2 -j4 -N2 "/sys/firmware/efi/efivars/BootCurrent-$g" 2>/dev/null | tr -d ' \n' | tr a-f A-F)
    while [ ${#cur} -lt 4 ]; do cur="0$cur"; done
    # EFI_LOAD_OPTION after efivarfs' 4 attribute bytes: u32 attributes,
    # u16 path length, then the UCS-2 description up to a NUL.
    desc=""
    for u in $(dd if="/sys/firmware/efi/efivars/Boot$cur-$g" bs=1 skip=10 count=160 2>/dev/null | od -An -v -tu2); do
        [ "$u" = 0 ] && break
        [ "$u" -lt 128 ] && desc="$desc$(printf "\\$(printf %03o "$u")")"
    done
    echo "SHOAL-BOOTCURRENT Boot$cur $desc"
    # BootCurrent does not name the option that booted an ISO (OVMF reports
    # another one), so the medium decides: an ISO the firmware HTTP-booted
    # runs from a RAM disk, which the firmware publishes as an ACPI NFIT
    # table; one from virtual media is on a CD-ROM drive.
    sleep 1
    if [ -e /sys/firmware/acpi/tables/NFIT ]; then
        bootpath=uefi-http
    elif ls /sys/block 2>/dev/null | grep -q '^sr'; then
        bootpath=uefi-cd
    fi
fi
echo "SHOAL-BOOTPATH $bootpath"
ipmi() { LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu /usr/bin/ipmitool -I open "$@" 2>&1; }
if [ -x /usr/bin/ipmitool ]; then
    # ipmi_si finds the BMC's KCS interface from ACPI/SMBIOS as it loads.
    i=0
    while [ ! -e /dev/ipmi0 ] && [ $i -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
    if [ -e /dev/ipmi0 ]; then
        echo "SHOAL-IPMI device /dev/ipmi0"
        ipmi chassis bootparam get 5 | sed 's/^/SHOAL-IPMI /'
        guid=$(ipmi mc guid | awk -F': *' '/System GUID/ {print $2}' | tr -d ' \r' | tr A-F a-f)
        smbios=$(tr A-F a-f </sys/class/dmi/id/product_uuid)
        echo "SHOAL-IPMI guid $guid smbios $smbios"
        [ -n "$guid" ] && [ "$guid" = "$smbios" ] && echo "SHOAL-IPMI guid matches"
        ipmi chassis power status | sed 's/^/SHOAL-IPMI /'
    else
        echo "SHOAL-IPMI no device"
    fi
fi
ip link set lo up
ip link set eth0 up
udhcpc -i eth0 -n -q -t 10 -s /udhcpc.sh >/dev/null 2>&1
if [ -f /tmp/dhcp ]; then
    . /tmp/dhcp
    echo "SHOAL-IP $ip server $serverid"
    if wget -q -O /dev/null --post-data "marker=deploy-ramdisk bootpath=$bootpath cmdline=$cmdline" "http://$serverid:8080/heartbeat"; then
        echo "SHOAL-HEARTBEAT sent"
    else
        echo "SHOAL-HEARTBEAT failed"
    fi
else
    echo "SHOAL-DHCP failed"
fi
# A scenario whose driver ejects the deploy CD once the machine has
# heartbeated, as Ironic does when its agent is done, serves `wait-eject`:
# the machine powers off only once its CD drive holds no medium. The
# kernel and this initramfs are in memory by now; the drive is opened
# briefly (the kernel locks the tray only while it is open).
cd=$(ls /sys/block 2>/dev/null | grep '^sr' | head -n 1)
if [ -n "$cd" ] && [ -n "$serverid" ] && wget -q -O /dev/null "http://$serverid:8080/wait-eject"; then
    echo "SHOAL-MEDIA waiting for eject of /dev/$cd"
    i=0
    while dd if="/dev/$cd" of=/dev/null bs=2048 count=1 2>/dev/null && [ $i -lt 300 ]; do
        sleep 1
        i=$((i + 1))
    done
    if dd if="/dev/$cd" of=/dev/null bs=2048 count=1 2>/dev/null; then
        echo "SHOAL-MEDIA still inserted after $i s"
    else
        echo "SHOAL-MEDIA ejected after $i s"
    fi
fi
# A scenario whose host must stay up, as a real server's does once it has
# booted, serves `stay-on`; then only the BMC turns the machine off.
if [ -n "$serverid" ] && wget -q -O /dev/null "http://$serverid:8080/stay-on"; then
    echo "SHOAL-HOST stays on"
    while :; do sleep 3600; done
fi
if [ -e /dev/ipmi0 ]; then
    # Off through the BMC, as a host's management agent would: if that
    # fails, the machine stays on (and the harness sees it).
    echo "SHOAL-IPMI power off requested"
    ipmi chassis power off | sed 's/^/SHOAL-IPMI /'
    sleep 30
    echo "SHOAL-IPMI still on"
    sleep 3600
fi
poweroff -f
SH
chmod +x root/init root/udhcpc.sh
(cd root && find . | cpio -o -H newc --quiet | gzip -9) >iso/boot/initrd.gz
# A damaged initramfs only shows as a kernel panic in a VM: check it here.
gzip -t iso/boot/initrd.gz
[[ $(gzip -dc iso/boot/initrd.gz | od -An -c -N6 | tr -d " ") == 070701 ]] || { echo "deploy-ramdisk.sh: initramfs is not a newc cpio" >&2; exit 1; }
gzip -dc iso/boot/initrd.gz | cpio -t --quiet | grep -x init >/dev/null || { echo "deploy-ramdisk.sh: initramfs has no /init" >&2; exit 1; }
cp kernel/boot/vmlinuz-"$kver" iso/boot/vmlinuz
case $kind in
    kernel) cp iso/boot/vmlinuz "$out"; exit 0 ;;
    initrd) cp iso/boot/initrd.gz "$out"; exit 0 ;;
esac
cat >iso/boot/grub/grub.cfg <<'CFG'
serial --unit=0 --speed=115200
terminal_output serial console
set timeout=0
linux /boot/vmlinuz console=ttyS0,115200 shoal.deploy=1 ipa-debug=1 quiet
initrd /boot/initrd.gz
boot
CFG
grub-mkrescue -o "$out" iso >grub.log 2>&1 || { cat grub.log >&2; exit 1; }
