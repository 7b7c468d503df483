#!/usr/bin/env python3
"""The harness's `pyghmi` driver: asks the BMC for a boot over IPMI
(RMCP+, lanplus) with pyghmi, the library behind Ironic's ipminative
interfaces (the petitboot specification's driver), then powers on.

    pyghmi_boot.py --host H --port P pxe|disk [--persistent]
        [--mailbox-block HEX]... [--lock]
    pyghmi_boot.py --host H --port P power-on [--mailbox-block HEX]...

A machine that is on is powered off first (and waited for). Each
--mailbox-block is one 16-byte block of the boot initiator mailbox (boot
option parameter 7), in order, as the harness lays them out; they are
written before the boot device. --lock leaves boot option
parameter 0 at "set in progress" after it. Prints what the BMC reports for
the boot device afterwards.
"""

import argparse
import sys
import time

from pyghmi.ipmi import command


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--host', required=True)
    p.add_argument('--port', type=int, default=623)
    p.add_argument('--user', default='admin')
    p.add_argument('--password', default='password')
    sub = p.add_subparsers(dest='action', required=True)
    for name in ('pxe', 'disk'):
        b = sub.add_parser(name)
        b.add_argument('--persistent', action='store_true')
        b.add_argument('--mailbox-block', action='append', default=[])
        b.add_argument('--lock', action='store_true')
    on = sub.add_parser('power-on')
    on.add_argument('--mailbox-block', action='append', default=[])
    a = p.parse_args()

    blocks = [bytes.fromhex(b) for b in a.mailbox_block]
    if any(len(b) != 16 for b in blocks):
        sys.exit('pyghmi_boot.py: a mailbox block is 16 bytes')
    ipmi = command.Command(bmc=a.host, userid=a.user, password=a.password,
                           port=a.port)
    if a.action != 'power-on' or blocks:
        if ipmi.get_power()['powerstate'] != 'off':
            ipmi.set_power('off', wait=120)
    for i, block in enumerate(blocks):
        ipmi.xraw_command(netfn=0x00, command=0x08,
                          data=bytes([0x07, i]) + block)
    if a.action != 'power-on':
        dev = {'pxe': 'network', 'disk': 'hd'}[a.action]
        ipmi.set_bootdev(dev, persist=a.persistent)
        print(ipmi.get_bootdev())
        if a.lock:
            ipmi.xraw_command(netfn=0x00, command=0x08, data=bytes([0x00, 0x01]))
    ipmi.set_power('on')
    deadline = time.monotonic() + 60
    while ipmi.get_power()['powerstate'] != 'on':
        if time.monotonic() > deadline:
            sys.exit('pyghmi_boot.py: the machine did not report power on')
        time.sleep(0.5)


if __name__ == '__main__':
    main()
