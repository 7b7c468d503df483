#!/usr/bin/env bash
# Builds a whole-disk instance image for x86_64 UEFI machines, the image
# an agent deploy writes to the machine's disk:
#   instance-image.sh raw OUT MARKER
#   instance-image.sh qcow2 OUT MARKER
# GPT, 64 MiB: partition 1 an EFI system partition (FAT) whose removable
# media loader \EFI\BOOT\BOOTX64.EFI is a standalone grub (Debian's
# grub-efi-amd64-bin) that prints "SHOAL-MARKER <MARKER>" on the serial
# port and powers off; partition 2 an ext4 root file system holding
# /etc/shoal-instance. Where the loader came from, the firmware says
# itself just before (OVMF: BdsDxe: starting Boot0008 "ironic1" from
# HD(1,GPT,...)/\EFI\BOOT\BOOTX64.EFI); this grub knows no more of it. Needs grub-efi-amd64-bin, dosfstools, e2fsprogs,
# fdisk, mtools and qemu-utils; ci/test installs them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kind=${1:?raw|qcow2} out=${2:?output file} marker=${3:?marker}
[[ $kind == @(raw|qcow2) ]] || { echo "instance-image.sh: 'raw' or 'qcow2', not '$kind'" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

marker_grub_cfg "$marker" >grub.cfg
marker_efi BOOTX64.EFI grub.cfg

# Sectors of 512 bytes: the ESP at 1 MiB (32 MiB), the root after it
# (30 MiB), the backup GPT in the last 33 sectors of 64 MiB.
esp_start=2048 esp_size=65536 root_start=67584 root_size=61440 total=131072
truncate -s $((esp_size * 512)) esp.img
mkfs.vfat -n ESP esp.img >/dev/null
mmd -i esp.img ::/EFI ::/EFI/BOOT
mcopy -i esp.img BOOTX64.EFI ::/EFI/BOOT/BOOTX64.EFI
mkdir -p rootfs/etc
echo "shoal whole-disk instance: $marker" >rootfs/etc/shoal-instance
mkfs.ext4 -q -L root -d rootfs root.img $((root_size / 2))k >/dev/null
truncate -s $((total * 512)) disk.raw
sfdisk --quiet disk.raw <<SFDISK
label: gpt
first-lba: 2048
start=$esp_start, size=$esp_size, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="ESP"
start=$root_start, size=$root_size, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name="root"
SFDISK
dd if=esp.img of=disk.raw bs=512 seek=$esp_start conv=notrunc status=none
dd if=root.img of=disk.raw bs=512 seek=$root_start conv=notrunc status=none
case $kind in
    raw) mv disk.raw "$out" ;;
    qcow2) qemu-img convert -q -f raw -O qcow2 disk.raw "$out" ;;
esac
