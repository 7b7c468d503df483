# Shell functions the vm-images recipes source. The image cache key covers
# this file too (harness/src/images.rs), so a change here rebuilds them.

# copy_modules MODS DEST MODULE...: copies each kernel module and its
# dependencies (from MODS/modules.dep) into DEST, and appends their names
# in load order to DEST/order, each once.
copy_modules() {
    local mods=$1 dest=$2 m line deps d b
    shift 2
    for m in "$@"; do
        line=$(grep -E "(^|/)$m\.ko(\.[a-z]+)?:" "$mods/modules.dep") ||
            { echo "copy_modules: no module $m in $mods" >&2; return 1; }
        deps=${line#*:}
        for d in $(echo $deps | tr ' ' '\n' | tac) "${line%%:*}"; do
            b=$(basename "$d")
            if ! grep -qx "$b" "$dest/order" 2>/dev/null; then
                cp "$mods/$d" "$dest/" && echo "$b" >>"$dest/order"
            fi
        done
    done
}

# marker_grub_cfg MARKER: a grub.cfg that prints "SHOAL-MARKER MARKER" on
# the serial port and powers the machine off.
marker_grub_cfg() {
    printf '%s\n' "serial --unit=0 --speed=115200" "terminal_output serial console" \
        "echo \"SHOAL-MARKER $1\"" "sleep 1" "halt"
}

# marker_efi OUT CFG: a standalone grub EFI application (Debian's
# grub-efi-amd64-bin) that runs CFG.
marker_efi() {
    grub-mkstandalone -O x86_64-efi -o "$1" \
        --install-modules="serial terminal echo sleep halt normal configfile test" \
        --modules="serial terminal" --locales= --fonts= --themes= \
        "boot/grub/grub.cfg=$2"
}
