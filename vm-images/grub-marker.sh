#!/usr/bin/env bash
# Builds an x86_64 UEFI boot artifact that prints a marker on the serial
# port and powers the machine off, from Debian's grub-efi-amd64-bin:
#   grub-marker.sh efi OUT.efi MARKER   a standalone EFI application
#   grub-marker.sh iso OUT.iso MARKER   a bootable ISO (grub-mkrescue)
# The marker line printed is "SHOAL-MARKER <MARKER>". Needs grub-efi-amd64-bin
# (and xorriso + mtools for the ISO); ci/test installs them. The harness
# runs recipes under a lock and publishes OUT itself when they succeed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kind=${1:?efi|iso} out=${2:?output file} marker=${3:?marker}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree=$work/tree  # what the ISO holds; the build log stays outside it
mkdir -p "$tree/boot/grub"
marker_grub_cfg "$marker" >"$tree/boot/grub/grub.cfg"
case $kind in
    efi)
        marker_efi "$out" "$tree/boot/grub/grub.cfg"
        ;;
    iso)
        grub-mkrescue -o "$out" "$tree" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
        ;;
    *) echo "grub-marker.sh: unknown kind $kind" >&2; exit 2 ;;
esac
