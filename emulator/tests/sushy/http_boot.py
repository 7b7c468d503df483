#!/usr/bin/env python3
"""Sets UefiHttp + HttpBootUri on one system with the real sushy library and
powers it on, as Ironic's redfish-https boot interface does.

    http_boot.py --url http://127.0.0.1:PORT --system SYSTEM_ID \
        --enabled Once|Continuous [--uri URL | --dhcp]

Prints the Boot object the emulator reports afterwards, as JSON.
"""

import argparse
import json
import sys

import sushy


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--url', required=True)
    p.add_argument('--system', required=True)
    p.add_argument('--enabled', choices=['Once', 'Continuous'], required=True)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument('--uri')
    g.add_argument('--dhcp', action='store_true', help='HttpBootUri null')
    a = p.parse_args()

    root = sushy.Sushy(a.url, auth=sushy.auth.BasicAuth('admin', 'unused'),
                       server_side_retries=1, server_side_retries_delay=1)
    system = root.get_system('/redfish/v1/Systems/' + a.system)
    if system.power_state != sushy.PowerState.OFF:
        system.reset_system(sushy.RESET_FORCE_OFF)
    enabled = {'Once': sushy.BOOT_SOURCE_ENABLED_ONCE,
               'Continuous': sushy.BOOT_SOURCE_ENABLED_CONTINUOUS}[a.enabled]
    system.refresh()
    system.set_system_boot_options(
        target=sushy.BOOT_SOURCE_TARGET_UEFI_HTTP, enabled=enabled,
        http_boot_uri=None if a.dhcp else a.uri)
    system.reset_system(sushy.RESET_ON)
    system.refresh()
    json.dump(system.json['Boot'], sys.stdout)
    print()


if __name__ == '__main__':
    main()
