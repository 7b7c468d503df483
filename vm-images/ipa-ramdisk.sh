#!/usr/bin/env bash
# Builds an ironic-python-agent (IPA) deploy ramdisk for x86_64 UEFI
# machines from Debian 12 packages and IPA from PyPI:
#   ipa-ramdisk.sh bundle OUTDIR IPA_VERSION
# OUTDIR receives
#   vmlinuz     Debian's kernel (linux-image-amd64)
#   initrd      the whole root file system as a gzip cpio: the kernel runs
#               it from RAM, with /init (below) as PID 1
#   esp.img     a FAT EFI system partition whose \EFI\BOOT\BOOTX64.EFI is a
#               standalone grub that finds the ISO holding /vmlinuz and
#               reads its /EFI/BOOT/grub.cfg: the "bootloader" Ironic puts
#               in the ISOs it builds for virtual media and UEFI HTTP boot
#   ipa.iso     the same kernel and initramfs as a bootable ISO (that ESP
#               and a grub.cfg with a serial console)
#   manifest    package versions, IPA's version, sizes
# /init mounts the kernel's file systems, starts udev, takes DHCP on every
# NIC, prints
#   SHOAL-MARKER ipa-ramdisk
#   SHOAL-BOOTPATH uefi-http | uefi-cd | uefi   (as deploy-ramdisk.sh)
#   SHOAL-IP <iface> <address>
# and runs ironic-python-agent, which reads ipa-api-url and the rest from
# the kernel command line as on any IPA ramdisk.
# Needs root, mmdebstrap, grub-efi-amd64-bin, mtools, xorriso and
# network access to deb.debian.org and PyPI; ci/test installs the tools.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kind=${1:?bundle} out=${2:?output folder} ipa=${3:?ironic-python-agent version}
[[ $kind == bundle ]] || { echo "ipa-ramdisk.sh: 'bundle', not '$kind'" >&2; exit 2; }
((EUID == 0)) || { echo "ipa-ramdisk.sh: must run as root (mmdebstrap)" >&2; exit 1; }
work=$(mktemp -d)
trap 'umount "$work/root/proc" 2>/dev/null || true; rm -rf --one-file-system "$work"' EXIT
root=$work/root

# The commands IPA runs (its GenericHardwareManager, disk and image code)
# and what /init needs. No recommends: each tool is named here.
packages=(
    linux-image-amd64 udev kmod busybox iproute2 ca-certificates
    python3 python3-venv
    util-linux fdisk gdisk parted dosfstools e2fsprogs xfsprogs
    qemu-utils lshw dmidecode pciutils psmisc bsdextrautils
    efibootmgr mdadm ipmitool hdparm
)
step() { echo "ipa-ramdisk: $*" >&2; }
step "debootstrap bookworm with ${#packages[@]} packages"
mmdebstrap --quiet --mode=root --variant=minbase \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --include="$(IFS=,; echo "${packages[*]}")" \
    bookworm "$root" http://deb.debian.org/debian >"$work/mmdebstrap.log" 2>&1 ||
    { tail -40 "$work/mmdebstrap.log" >&2; exit 1; }

step "ironic-python-agent $ipa from PyPI"
# The host fetches the wheels (its pip configuration reaches PyPI; the new
# root's may not), the root installs them from that folder alone.
python3 -m venv "$work/fetch"
"$work/fetch/bin/pip" wheel --quiet --disable-pip-version-check -w "$root/wheels" \
    "ironic-python-agent==$ipa" >"$work/pip.log" 2>&1 || { tail -40 "$work/pip.log" >&2; exit 1; }
chroot "$root" python3 -m venv /opt/ipa
chroot "$root" /opt/ipa/bin/pip install --quiet --no-index --find-links /wheels --disable-pip-version-check \
    "ironic-python-agent==$ipa" >"$work/pip.log" 2>&1 || { tail -40 "$work/pip.log" >&2; exit 1; }
rm -rf "$root/wheels"
# The agent reads /proc/cmdline as it imports: check it with the build
# host's /proc mounted, then leave the root as it was.
mount -t proc proc "$root/proc"
chroot "$root" /opt/ipa/bin/python -c 'import ironic_python_agent.agent' || {
    umount "$root/proc"
    echo "ipa-ramdisk.sh: ironic-python-agent does not import" >&2
    exit 1
}
umount "$root/proc"
# Bytecode for every module: a ramdisk that compiles its imports at each
# start spends minutes on it under TCG. pip compiled what it installed;
# this fills any gap, one process (a pool needs /dev/shm, which the root
# has not), and the check after it fails the build on any module left.
chroot "$root" /opt/ipa/bin/python -m compileall -q /opt/ipa/lib >"$work/compileall.log" 2>&1 ||
    { tail -20 "$work/compileall.log" >&2; exit 1; }
missing=$(cd "$root/opt/ipa/lib" && find . -name '*.py' -path '*/site-packages/*' | while read -r f; do
    d=$(dirname "$f") b=$(basename "$f" .py)
    compgen -G "$d/__pycache__/$b.cpython-*.pyc" >/dev/null || echo "$f"
done | sed -n 1,5p)
[[ -z $missing ]] || { echo "ipa-ramdisk.sh: no bytecode for $missing" >&2; exit 1; }

kver=$(basename "$(ls -d "$root"/lib/modules/*)")
step "kernel $kver; trimming to what a virtual or real server boots with"
cp "$root/boot/vmlinuz-$kver" "$work/vmlinuz"
# The modules a virtual or real server's agent needs (storage, CD-ROMs,
# NICs, the file systems it reads and writes, EFI variables, IPMI) and
# what they depend on; the rest (graphics, sound, wireless, ...) goes: it
# is most of the image.
keep=(
    virtio_pci virtio_blk virtio_scsi virtio_net virtio_console
    ahci ata_piix sd_mod sr_mod nvme usb_storage uas xhci_pci ehci_pci
    e1000 e1000e igb ixgbe i40e ice bnxt_en tg3 mlx5_core
    isofs vfat nls_cp437 nls_ascii nls_iso8859-1 nls_utf8 ext4 xfs efivarfs loop
    md_mod raid0 raid1 raid10 dm_mod dm_multipath
    ipmi_si ipmi_devintf ipmi_ssif
)
mods=$root/lib/modules/$kver
: >"$work/keep"
for m in "${keep[@]}"; do
    # Not in modules.dep: built into the kernel (efivarfs, ...), or a name
    # this kernel does not have, which the list must not keep quiet.
    # Module names are the same with - or _ (usb-storage, usb_storage).
    pat=${m//[-_]/[-_]}
    line=$(grep -E "(^|/)$pat\.ko(\.[a-z]+)?:" "$mods/modules.dep") || {
        grep -qE "/$pat\.ko" "$mods/modules.builtin" ||
            { echo "ipa-ramdisk.sh: no module $m in $kver" >&2; exit 1; }
        continue
    }
    echo "$line" | tr -d ':' | tr ' ' '\n' | sed '/^$/d' >>"$work/keep"
done
(cd "$mods" && find kernel -name '*.ko*') | sort >"$work/all"
sort -u "$work/keep" | comm -23 "$work/all" - | (cd "$mods" && xargs rm -f)
find "$mods/kernel" -type d -empty -delete
chroot "$root" depmod "$kver"
rm -rf "$root"/boot/* "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/{doc,man,info,locale} \
    "$root"/opt/ipa/lib/python3*/site-packages/ironic_python_agent/tests "$root"/lib/udev/hwdb.d
chroot "$root" /opt/ipa/bin/pip uninstall --quiet --yes pip >/dev/null

# The agent's command line comes from the boot loader; these are only the
# file-based settings a ramdisk image carries.
mkdir -p "$root/etc/ironic-python-agent"
cat >"$root/etc/ironic-python-agent/ironic-python-agent.conf" <<'CONF'
[DEFAULT]
# Logs go to the serial console, where the harness reads them.
use_stderr = true
CONF
cat >"$root/etc/udhcpc.sh" <<'SH'
#!/bin/sh
case "$1" in
    bound|renew)
        ip addr add "$ip/${mask:-24}" dev "$interface"
        [ -n "$router" ] && ip route add default via "${router%% *}" dev "$interface" 2>/dev/null
        echo "SHOAL-IP $interface $ip"
        ;;
esac
SH
cat >"$root/init" <<'SH'
#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /run /tmp /run/ironic-python-agent
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mkdir -p /run/ironic-python-agent /run/udev
echo 1 >/proc/sys/kernel/sysrq
echo "SHOAL-MARKER ipa-ramdisk"
bootpath=bios
if [ -d /sys/firmware/efi ]; then
    bootpath=uefi
    mount -t efivarfs efivarfs /sys/firmware/efi/efivars 2>/dev/null
fi
/lib/systemd/systemd-udevd --daemon
udevadm trigger --type=subsystems --action=add
udevadm trigger --type=devices --action=add
udevadm settle --timeout=60
# As deploy-ramdisk.sh: a RAM disk the firmware published (ACPI NFIT)
# means an HTTP-booted ISO, a CD-ROM drive a virtual medium.
if [ "$bootpath" = uefi ]; then
    if [ -e /sys/firmware/acpi/tables/NFIT ]; then
        bootpath=uefi-http
    elif ls /sys/block | grep -q '^sr'; then
        bootpath=uefi-cd
    fi
fi
echo "SHOAL-BOOTPATH $bootpath"
ip link set lo up
for n in /sys/class/net/*; do
    i=${n##*/}
    [ "$i" = lo ] && continue
    ip link set "$i" up
    busybox udhcpc -i "$i" -n -q -t 10 -T 2 -s /etc/udhcpc.sh >/dev/null 2>&1 || echo "SHOAL-DHCP failed $i"
done
echo "SHOAL-IPA starting"
/opt/ipa/bin/ironic-python-agent --config-file /etc/ironic-python-agent/ironic-python-agent.conf
echo "SHOAL-IPA exited $?"
while :; do sleep 3600; done
SH
chmod +x "$root/init" "$root/etc/udhcpc.sh"

step "initramfs"
# gzip, as diskimage-builder's ramdisks: Ironic decompresses what it
# downloads when it is zstd (meant for disk images), which would put the
# whole root uncompressed into the ISOs it builds.
(cd "$root" && find . -xdev | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -6 >"$work/initrd")
gzip -t "$work/initrd"

step "boot loader and ISO"
# The ESP's grub reads /EFI/BOOT/grub.cfg of the medium it was loaded
# from, but with its own memory disk as the root: each configuration
# (this ISO's, and the template Ironic is given for its ISOs) first finds
# the medium by the kernel's file. Should a grub read the embedded one,
# it does the same.
mkdir -p "$work/esp-cfg"
cat >"$work/esp-cfg/grub.cfg" <<'CFG'
search --no-floppy --file --set=root /vmlinuz
export root
configfile /EFI/BOOT/grub.cfg
CFG
grub-mkstandalone -O x86_64-efi -o "$work/BOOTX64.EFI" \
    --install-modules="search search_fs_file iso9660 fat part_gpt part_msdos configfile normal linux gzio echo serial terminal test sleep halt reboot all_video" \
    --modules="search search_fs_file iso9660 configfile" --locales= --fonts= --themes= \
    "boot/grub/grub.cfg=$work/esp-cfg/grub.cfg"
dd if=/dev/zero of="$work/esp.img" bs=1M count=4 status=none
mformat -i "$work/esp.img" -v ESP ::
mmd -i "$work/esp.img" ::/EFI ::/EFI/BOOT
mcopy -i "$work/esp.img" "$work/BOOTX64.EFI" ::/EFI/BOOT/BOOTX64.EFI
iso=$work/iso
mkdir -p "$iso/EFI/BOOT"
cp "$work/vmlinuz" "$iso/vmlinuz"
cp "$work/initrd" "$iso/initrd"
cp "$work/esp.img" "$iso/esp.img"
cat >"$iso/EFI/BOOT/grub.cfg" <<'CFG'
search --no-floppy --file --set=root /vmlinuz
serial --unit=0 --speed=115200
terminal_output serial console
set timeout=0
linux /vmlinuz console=ttyS0,115200 ipa-debug=1
initrd /initrd
boot
CFG
xorrisofs -quiet -r -V IPA -l -e esp.img -no-emul-boot -o "$work/ipa.iso" "$iso" 2>"$work/xorriso.log" ||
    { cat "$work/xorriso.log" >&2; exit 1; }

mkdir -p "$out"
mv "$work/vmlinuz" "$work/initrd" "$work/esp.img" "$work/ipa.iso" "$out/"
{
    echo "ironic-python-agent $ipa"
    echo "kernel $kver"
    chroot "$root" dpkg-query -W -f='${Package} ${Version}\n' 2>/dev/null || true
    chroot "$root" /opt/ipa/bin/pip freeze 2>/dev/null || true
    (cd "$out" && du -b vmlinuz initrd esp.img ipa.iso)
    echo "root file system $(du -sb "$root" | cut -f1) bytes"
} >"$out/manifest" 2>/dev/null
step "done: $(du -h "$out/initrd" | cut -f1) initramfs"
