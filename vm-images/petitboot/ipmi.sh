# Sourced by the netboot image's /init: on an OPAL (powernv) machine, reads
# the BMC's boot settings over in-band IPMI (/dev/ipmi0, the kernel's
# ipmi_powernv) the way petitboot's powerpc platform code does, and sets
#   bootdev  network|disk|cdrom|safe|setup: the override for this start
#   order    the boot order from the boot initiator mailbox (parameter 7)
# Elsewhere (pseries has no IPMI) it leaves them as they are.

# ipmitool's output; its complaints (such as the IANA registry Debian ships
# elsewhere) go to /tmp/ipmi.err.
ipmi() { LD_LIBRARY_PATH=/lib/powerpc64le-linux-gnu /bin/ipmitool -I open "$@" 2>/tmp/ipmi.err; }
hex() { printf '%d' "0x$1"; }

# The boot flags (parameter 5). The answer must be 8 bytes with completion
# code 0 (ipmitool prints the 7 after it), parameter version 1, the
# parameter not marked invalid or locked, and the boot flag valid bit set.
ipmi_boot_flags() {
    local out
    if ! out=$(ipmi raw 0x00 0x09 0x05 0x00 0x00); then
        echo "petitboot: IPMI: Get System Boot Options failed: $(grep -v IANA /tmp/ipmi.err | tail -n 1): no boot device override"
        return
    fi
    set -- $out
    if [ $# -ne 7 ] || [ $(($(hex "$1") & 0x0f)) -ne 1 ]; then
        echo "petitboot: IPMI: unexpected boot flags answer ($out): no boot device override"
        return
    fi
    echo "petitboot: IPMI boot flags: $*"
    if [ $(($(hex "$2") & 0x80)) -ne 0 ]; then
        echo "petitboot: IPMI boot flags marked invalid or locked: no boot device override"
        return
    fi
    if [ $(($(hex "$3") & 0x80)) -eq 0 ]; then
        echo "petitboot: IPMI boot flags not valid: no boot device override"
        return
    fi
    local persistent=$(($(hex "$3") & 0x40)) dev=$((($(hex "$4") >> 2) & 0x0f))
    case $dev in
        0) bootdev='' ;;
        1) bootdev=network ;;
        2) bootdev=disk ;;
        3) bootdev=safe ;;
        5) bootdev=cdrom ;;
        6) bootdev=setup ;;
        *) echo "petitboot: IPMI boot device $dev not understood: no boot device override"; return ;;
    esac
    if [ -z "$bootdev" ]; then
        echo "petitboot: IPMI boot flags valid, no override"
        return
    fi
    if [ $persistent -ne 0 ]; then
        echo "petitboot: IPMI boot device $bootdev, persistent"
    else
        echo "petitboot: IPMI boot device $bootdev, this boot only"
        # Honoured once: the flags go back to "valid, no override".
        if ipmi raw 0x00 0x08 0x05 0x80 0x00 0x00 0x00 0x00 >/dev/null; then
            echo "petitboot: IPMI boot flags cleared"
        else
            echo "petitboot: IPMI: clearing the boot flags failed"
        fi
    fi
}

# The boot initiator mailbox (parameter 7): blocks of 16 bytes read until
# an error; block 0 starts with the IANA number 02 00 00 and the data must
# start with "petitboot,bootdevs=", whose value (to the first NUL) is the
# boot order: network, disk, any, mac:..., uuid:...
ipmi_mailbox() {
    local i=0 out data='' b
    while [ $i -lt 255 ]; do
        out=$(ipmi raw 0x00 0x09 0x07 $i 0x00) || break
        set -- $out
        [ $# -gt 3 ] || break
        shift 3
        if [ $i -eq 0 ]; then
            # An empty mailbox: nothing to say.
            [ "$*" = '00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00' ] && return
            if [ $# -lt 3 ] || [ "$1 $2 $3" != '02 00 00' ]; then
                echo "petitboot: IPMI mailbox: no IANA 02 00 00 in block 0: ignored"
                return
            fi
            shift 3
        fi
        for b in "$@"; do data="$data$b "; done
        i=$((i + 1))
    done
    [ -n "$data" ] || return
    # Hex to text, up to the first NUL.
    local text
    text=$(for b in $data; do [ "$b" = 00 ] && break; printf "\\$(printf '%03o' "0x$b")"; done)
    case $text in
        petitboot,bootdevs=*) ;;
        *) [ -n "$text" ] && echo "petitboot: IPMI mailbox holds no petitboot,bootdevs ($i blocks)"; return ;;
    esac
    local devs='' d
    for d in ${text#petitboot,bootdevs=}; do
        case $d in
            network|mac:*) devs="$devs network" ;;
            disk|uuid:*) devs="$devs disk" ;;
            any) devs="$devs disk network" ;;
            *) echo "petitboot: IPMI mailbox: boot device $d not here: skipped" ;;
        esac
    done
    echo "petitboot: IPMI mailbox ($i blocks): $text"
    [ -n "$devs" ] && order=${devs# }
}

if [ -d /proc/device-tree/ibm,opal ]; then
    i=0
    while [ ! -e /dev/ipmi0 ] && [ $i -lt 20 ]; do sleep 0.25; i=$((i + 1)); done
    if [ -e /dev/ipmi0 ]; then
        echo "petitboot: IPMI device /dev/ipmi0"
        ipmi_ok=1
        ipmi_boot_flags
        ipmi_mailbox
    else
        echo "petitboot: no IPMI device: the BMC does not answer in-band; no boot device override"
    fi
fi
