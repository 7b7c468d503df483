#!/usr/bin/env python3
"""The harness's `proliantutils` driver: drives an iLO profile with HPE's
proliantutils (IloClient, the library behind Ironic's iLO drivers), as an
operator or Ironic's iLO virtual media boot does, over its Redfish path.

    proliantutils_boot.py --host HOST:PORT virtual-media --uri URL
    proliantutils_boot.py --host HOST:PORT uefi-http --uri URL [--ca PEM]
    proliantutils_boot.py --host HOST:PORT power-on

IloClient is made in its default mode: it asks RIBCL for the product name
first, fails (HOST:PORT is no RIBCL address), and falls back to Redfish,
where the System's Model (a Gen10) routes every call to Redfish.

virtual-media: with the host off (the power button held if it is on), iLO's
virtual media takes the image (insert_virtual_media: the client's HEAD of
the URL, then the insert), set_vm_status(BOOT_ONCE) sets the CD's
Oem.Hpe.BootOnNextServerReset, get_one_time_boot must then say CDROM; the
power button is pressed, and the host's POST state is followed until
FinishedPost: it must pass through InPost, and a boot change asked for
while it is there must be refused with UnableToModifyDuringSystemPOST.
uefi-http boots the URL the iLO way: with the host off, --ca (the PEM
text) is enrolled into the BIOS's TLS settings (add_tls_certificate, which
takes files and wants the BIOS in Uefi mode), the URL is POSTed to the
BIOS settings (set_http_boot_url: UrlBootFile, PreBootNetwork, Dhcpv4),
get_one_time_boot must say UEFIHTTP after set_one_time_boot, and the power
button starts the host.
power-on presses the power button if the host is off.

Prints `PROLIANTUTILS <json>`: the model, the POST states seen, the refusal.
Exits non-zero with the reason when anything is not as it should be.
"""

import argparse
import json
import sys
import tempfile
import time

from proliantutils import exception
from proliantutils.ilo import client


def wait(what, check, limit=120, step=0.5):
    deadline = time.monotonic() + limit
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            sys.exit('proliantutils_boot: timed out waiting for ' + what)
        time.sleep(step)


def off(ilo):
    """Holds the power button until the host is off, if it is on."""
    if ilo.get_host_power_status() != 'OFF':
        ilo.hold_pwr_btn()
        wait('the host to power off', lambda: ilo.get_host_power_status() == 'OFF')


def follow_post(ilo, limit=180):
    """Presses the power button and follows the POST state to its end;
    tries a boot change while the host is in POST. Returns the states seen
    and the refusal's text."""
    ilo.press_pwr_btn()
    seen, refusal = [], None
    deadline = time.monotonic() + limit
    while True:
        state = ilo.get_host_post_state()
        if not seen or seen[-1] != state:
            seen.append(state)
        if state == 'InPost' and refusal is None:
            try:
                ilo.set_one_time_boot('HDD')
            except exception.IloError as e:
                refusal = str(e)
            else:
                sys.exit('proliantutils_boot: a boot change was taken while '
                         'the host was in POST')
        if state == 'FinishedPost':
            return seen, refusal
        if time.monotonic() > deadline:
            sys.exit('proliantutils_boot: POST states %s, never FinishedPost' % seen)
        time.sleep(0.3)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--host', required=True)
    p.add_argument('--user', default='admin')
    p.add_argument('--password', default='password')
    sub = p.add_subparsers(dest='action', required=True)
    v = sub.add_parser('virtual-media')
    v.add_argument('--uri', required=True)
    u = sub.add_parser('uefi-http')
    u.add_argument('--uri', required=True)
    u.add_argument('--ca', help='a CA certificate (PEM text) to enroll first')
    sub.add_parser('power-on')
    a = p.parse_args()

    ilo = client.IloClient(a.host, a.user, a.password)
    out = {'model': ilo.model, 'power': ilo.get_host_power_status()}
    if a.action == 'power-on':
        if out['power'] == 'OFF':
            ilo.press_pwr_btn()
            wait('the host to power on', lambda: ilo.get_host_power_status() == 'ON')
        print('PROLIANTUTILS ' + json.dumps(out), flush=True)
        return

    off(ilo)
    if a.action == 'uefi-http':
        if a.ca:
            with tempfile.NamedTemporaryFile('w', suffix='.pem') as f:
                f.write(a.ca)
                f.flush()
                ilo.add_tls_certificate([f.name])
            out['ca_enrolled'] = True
        ilo.set_http_boot_url(a.uri)
        ilo.set_one_time_boot('UEFIHTTP')
        once = ilo.get_one_time_boot()
        if once != 'UEFIHTTP':
            sys.exit('proliantutils_boot: one-time boot is %r, not UEFIHTTP' % once)
        out['one_time_boot'] = once
        ilo.press_pwr_btn()
        wait('the host to power on', lambda: ilo.get_host_power_status() == 'ON')
        out['power'] = 'ON'
        print('PROLIANTUTILS ' + json.dumps(out), flush=True)
        return

    ilo.insert_virtual_media(a.uri, 'CDROM')
    # CONNECT sends nothing (proliantutils' Redfish path); BOOT_ONCE sets
    # the CD's BootOnNextServerReset.
    ilo.set_vm_status('CDROM', 'CONNECT')
    ilo.set_vm_status('CDROM', 'BOOT_ONCE')
    once = ilo.get_one_time_boot()
    if once != 'CDROM':
        sys.exit('proliantutils_boot: one-time boot is %r after BOOT_ONCE, not CDROM' % once)
    out['one_time_boot'] = once
    out['post_states'], refusal = follow_post(ilo)
    if 'InPost' not in out['post_states']:
        sys.exit('proliantutils_boot: POST states %s, never InPost' % out['post_states'])
    if 'UnableToModifyDuringSystemPOST' not in (refusal or ''):
        sys.exit('proliantutils_boot: the boot change in POST was refused with '
                 '%r, not UnableToModifyDuringSystemPOST' % refusal)
    out['refused_in_post'] = 'UnableToModifyDuringSystemPOST'
    out['power'] = ilo.get_host_power_status()
    print('PROLIANTUTILS ' + json.dumps(out), flush=True)


if __name__ == '__main__':
    main()
