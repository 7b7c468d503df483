#!/usr/bin/env python3
"""The harness's `sushy` driver: asks the BMC for a boot with the real sushy
library, the way Ironic's redfish boot interfaces do, then powers on.

    sushy_boot.py --url URL --system ID uefi-http --enabled Once [--uri URL]
        [--bios NAME=VALUE ...] [--mode UEFI] [--enroll-ca PEM]
    sushy_boot.py --url URL --system ID virtual-media --uri URL
        [--eject-after-heartbeat LOG]
    sushy_boot.py --url URL --system ID pxe --enabled Once
    sushy_boot.py --url URL --system ID disk --enabled Once
    sushy_boot.py --url URL --system ID power-on
    sushy_boot.py --url URL --system ID --firmware-update IMAGE-URL ACTION ...

uefi-http without --uri sends HttpBootUri null (the URL comes from DHCP).
--bios stages BIOS attributes first (the vendor route for the URI where the
BMC has no writable HttpBootUri: HttpDev1Uri for iDRAC, UrlBootFile for iLO).
--enroll-ca enrolls a CA (the PEM text) in the system's Boot.Certificates
first, through sushy's CertificateCollection, as an operator does before an
HTTPS boot; the CA is then listed from the collection.
--eject-after-heartbeat waits, after the power-on, for the machine's first
heartbeat (a line in LOG, the boot server's heartbeat log) and then ejects
the CD, as Ironic does once its agent reports the deploy done.
--firmware-update first updates the firmware from IMAGE-URL the way Ironic's
redfish firmware interface does: UpdateService.SimpleUpdate with the system
as target, then the task followed (a fresh GET each time) until it is no
longer New, Starting, Running or Pending; it must end Completed with status
OK. A BIOS image is staged for the reset: the boot's power-on installs it.
Prints the Boot object the BMC reports afterwards, as JSON.
"""

import argparse
import json
import sys
import time

import sushy
from sushy.resources.certificateservice import certificate


def wait(what, check, limit=120):
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            sys.exit('sushy_boot: timed out waiting for ' + what)
        time.sleep(0.5)


def heartbeats(log):
    """Whether the boot server's heartbeat log holds a line yet."""
    try:
        with open(log, encoding='utf-8', errors='replace') as f:
            return any(line.strip() for line in f)
    except FileNotFoundError:
        return False


def update_firmware(root, system, url):
    """SimpleUpdate with the system as target, followed to the task's end."""
    monitor = root.get_update_service().simple_update(url, targets=[system.path])
    deadline = time.monotonic() + 300
    while True:
        task = monitor.get_task()
        state = str(getattr(task.task_state, 'value', task.task_state))
        if state not in ('New', 'Starting', 'Running', 'Pending'):
            break
        if time.monotonic() > deadline:
            sys.exit('sushy_boot: the firmware update is still ' + state)
        time.sleep(0.5)
    status = str(getattr(task.task_status, 'value', task.task_status))
    said = '; '.join(m.message or m.message_id for m in task.messages or [])
    if state != 'Completed' or status != 'OK':
        sys.exit(f'sushy_boot: the firmware update ended {state}/{status}: {said}')
    print(f'sushy_boot: firmware update {state}: {said}', file=sys.stderr)


def enroll(system, pem):
    """Adds the CA to Boot.Certificates and checks the BMC lists it."""
    path = system.json['Boot']['Certificates']['@odata.id']
    certs = certificate.CertificateCollection(
        system._conn, path, redfish_version=system.redfish_version,
        registries=system.registries, root=system.root)
    cert = certs.create_member(pem, 'PEM')
    if cert is None:
        sys.exit('sushy_boot: the BMC gave no Location for the certificate')
    listed = [c.fingerprint for c in certs.get_members()]
    if cert.fingerprint not in listed:
        sys.exit('sushy_boot: the enrolled CA is not in ' + path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--url', required=True)
    p.add_argument('--system', required=True)
    p.add_argument('--firmware-update', metavar='IMAGE-URL')
    sub = p.add_subparsers(dest='action', required=True)
    u = sub.add_parser('uefi-http')
    u.add_argument('--enabled', choices=['Once', 'Continuous'], default='Once')
    u.add_argument('--uri')
    u.add_argument('--bios', action='append', default=[], metavar='NAME=VALUE')
    u.add_argument('--mode', choices=['UEFI'], help='also send BootSourceOverrideMode')
    u.add_argument('--enroll-ca', metavar='PEM', help='a CA for HTTPS boot')
    v = sub.add_parser('virtual-media')
    v.add_argument('--uri', required=True)
    v.add_argument('--eject-after-heartbeat', metavar='LOG')
    for name in ('pxe', 'disk'):
        x = sub.add_parser(name)
        x.add_argument('--enabled', choices=['Once', 'Continuous'], default='Once')
    sub.add_parser('power-on')
    a = p.parse_args()

    root = sushy.Sushy(a.url, auth=sushy.auth.SessionAuth('admin', 'unused'),
                       server_side_retries=1, server_side_retries_delay=1)
    system = root.get_system('/redfish/v1/Systems/' + a.system)

    if a.action != 'power-on':
        if system.power_state != sushy.PowerState.OFF:
            system.reset_system(sushy.RESET_FORCE_OFF)
            wait('power off', lambda: (system.refresh(), system.power_state)[1]
                 == sushy.PowerState.OFF)
        system.refresh()
    if a.firmware_update:
        update_firmware(root, system, a.firmware_update)
        system.refresh()
    if a.action in ('pxe', 'disk'):
        # Ironic's pxe interface on a BIOS-mode (OpenPOWER) node; its
        # set_boot_device(disk) for the instance.
        system.set_system_boot_options(
            target={'pxe': sushy.BOOT_SOURCE_TARGET_PXE,
                    'disk': sushy.BOOT_SOURCE_TARGET_HDD}[a.action],
            enabled={'Once': sushy.BOOT_SOURCE_ENABLED_ONCE,
                     'Continuous': sushy.BOOT_SOURCE_ENABLED_CONTINUOUS}[a.enabled])
    elif a.action == 'uefi-http':
        if a.bios:
            # As Ironic's redfish BIOS interface: at the next reset when
            # the settings object offers it (an iDRAC then schedules the
            # configuration job without which staged values never apply).
            bios = system.bios
            apply_time = None
            if (bios.supported_apply_times
                    and sushy.APPLY_TIME_ON_RESET in bios.supported_apply_times):
                apply_time = sushy.APPLY_TIME_ON_RESET
            bios.set_attributes(dict(kv.split('=', 1) for kv in a.bios),
                                apply_time=apply_time)
            system.refresh()
        # After the BIOS settings: iDRAC takes a CA only once HTTP device
        # 1's TLS mode is set.
        if a.enroll_ca:
            enroll(system, a.enroll_ca)
        enabled = {'Once': sushy.BOOT_SOURCE_ENABLED_ONCE,
                   'Continuous': sushy.BOOT_SOURCE_ENABLED_CONTINUOUS}[a.enabled]
        system.set_system_boot_options(
            target=sushy.BOOT_SOURCE_TARGET_UEFI_HTTP, enabled=enabled,
            http_boot_uri=a.uri,
            mode=sushy.BOOT_SOURCE_MODE_UEFI if a.mode else None)
    elif a.action == 'virtual-media':
        manager = system.managers[0]
        cd = next(m for m in manager.virtual_media.get_members()
                  if sushy.VIRTUAL_MEDIA_CD in m.media_types)
        if cd.inserted:
            cd.eject_media()
        cd.insert_media(a.uri, inserted=True, write_protected=True)
        # sushy does not follow the task monitor here: poll, as Ironic does.
        wait('the image to be inserted',
             lambda: (cd.refresh(), cd.inserted)[1], limit=300)
        system.refresh()
        system.set_system_boot_options(
            target=sushy.BOOT_SOURCE_TARGET_CD,
            enabled=sushy.BOOT_SOURCE_ENABLED_ONCE,
            mode=sushy.BOOT_SOURCE_MODE_UEFI)
    system.reset_system(sushy.RESET_ON)
    if a.action == 'virtual-media' and a.eject_after_heartbeat:
        def beat_or_off():
            system.refresh()
            return (heartbeats(a.eject_after_heartbeat)
                    or system.power_state == sushy.PowerState.OFF)
        wait('the machine to heartbeat', beat_or_off, limit=240)
        if not heartbeats(a.eject_after_heartbeat):
            sys.exit('sushy_boot: the machine powered off before its heartbeat')
        cd.refresh()
        cd.eject_media()
        wait('the CD to be ejected', lambda: (cd.refresh(), not cd.inserted)[1])
    system.refresh()
    json.dump(system.json['Boot'], sys.stdout)
    print()


if __name__ == '__main__':
    main()
