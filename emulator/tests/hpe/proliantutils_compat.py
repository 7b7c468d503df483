#!/usr/bin/env python3
"""HPE's proliantutils (IloClient's Redfish path, the library behind
Ironic's iLO drivers) against an iLO profile on a BMC endpoint of its own:
every call an operator's tooling or Ironic's iLO drivers make, each
checked against what the BMC then says.

    proliantutils_compat.py --host 127.0.0.1:PORT --cacert CA.pem

Prints one line per check and `N passed, M failed`; exits non-zero when
any failed.
"""

import argparse
import http.server
import os
import sys
import tempfile
import threading
import time
import traceback

from proliantutils import exception
from proliantutils.ilo import client

RESULTS = []


def check(name):
    def wrap(fn):
        def run(*a):
            try:
                fn(*a)
                RESULTS.append((name, None))
                print('PASS ' + name, flush=True)
            except Exception as e:  # every failure is reported, none stops the run
                RESULTS.append((name, e))
                print('FAIL %s: %s' % (name, e), flush=True)
                traceback.print_exc()
        return run
    return wrap


def eq(got, want, what):
    if got != want:
        raise AssertionError('%s: %r, not %r' % (what, got, want))


def wait(what, cond, limit=30):
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError('timed out waiting for ' + what)
        time.sleep(0.2)


def image_server():
    """A file server for the virtual media image: proliantutils HEADs the
    URL itself before it asks the BMC to insert it."""
    root = tempfile.mkdtemp()
    with open(os.path.join(root, 'boot.iso'), 'wb') as f:
        f.write(b'\0' * 4096)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return 'http://127.0.0.1:%d/boot.iso' % srv.server_address[1]


def ca_pem():
    """A CA certificate (PEM) for the firmware to trust."""
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'proliantutils test CA')])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--host', required=True)
    p.add_argument('--cacert', required=True)
    p.add_argument('--user', default='admin')
    p.add_argument('--password', default='password')
    a = p.parse_args()
    ilo = client.IloClient(a.host, a.user, a.password, cacert=a.cacert)
    image = image_server()

    @check('identity: a Gen10 model routes every call to Redfish')
    def identity():
        eq(ilo.get_product_name(), 'ProLiant DL360 Gen10 Plus', 'product name')
        if 'Gen10' not in ilo.model:
            raise AssertionError('model %r' % ilo.model)
        eq(ilo.get_host_power_status(), 'OFF', 'power')
        eq(ilo.get_host_post_state(), 'PowerOff', 'POST state')

    @check('boot mode: UEFI (now and pending), supported; the BIOS boot order')
    def boot_mode():
        eq(ilo.get_current_boot_mode(), 'UEFI', 'current boot mode')
        # The whole settings object: Ironic's ilo update_boot_mode reads it.
        eq(ilo.get_pending_boot_mode(), 'UEFI', 'pending boot mode')
        eq(ilo.get_supported_boot_mode(), 'legacy bios and uefi', 'supported')
        # No override: the BIOS's persistent order (Bios Oem.Hpe.Links.Boot),
        # the disk first.
        eq(ilo.get_persistent_boot_device(), 'HDD', 'persistent, from the boot order')

    @check("server capabilities and disk types (Ironic's ilo inspection)")
    def capabilities():
        caps = ilo.get_server_capabilities()
        for k, v in [('server_model', 'ProLiant DL360 Gen10 Plus'),
                     ('pci_gpu_devices', 0), ('nic_capacity', '1Gb'),
                     ('boot_mode_uefi', 'true'), ('hardware_supports_raid', 'true'),
                     ('has_ssd', 'true'), ('last_firmware_scan_result', 'Ok'),
                     ('security_override_switch', 'Ok')]:
            eq(caps.get(k), v, k)
        for k in ('ilo_firmware_version', 'rom_firmware_version', 'overall_security_status'):
            if not caps.get(k):
                raise AssertionError('%s missing from %s' % (k, caps))
        eq(ilo.get_available_disk_types(), ['SSD'], 'disk types')
        props = ilo.get_essential_properties()['properties']
        eq(props['cpu_arch'], 'x86_64', 'cpu_arch')
        if props['local_gb'] <= 0:
            raise AssertionError('local_gb %r' % props['local_gb'])

    @check("RAID through SmartStorageConfig: created, read back after the reset, deleted")
    def raid():
        cfg = {'logical_disks': [{
            'raid_level': '1', 'size_gb': 'MAX', 'volume_name': 'os',
            'physical_disks': ['1I:1:1', '1I:1:2'],
            'controller': 'HPE Smart Array P408i-a SR Gen10'}]}
        ilo.create_raid_configuration(cfg)
        if ilo.get_host_power_status() == 'OFF':
            ilo.set_host_power('ON')
        else:
            ilo.reset_server()
        got = ilo.read_raid_configuration(raid_config=cfg)['logical_disks']
        eq(len(got), 1, 'logical disks')
        eq((got[0]['raid_level'], got[0]['physical_disks'], got[0]['volume_name']),
           ('1', ['1I:1:1', '1I:1:2'], 'os'), 'the logical disk')
        if not got[0]['root_device_hint']['wwn'].startswith('0x600508B1'):
            raise AssertionError('wwn %r' % got[0]['root_device_hint'])
        eq(ilo.get_server_capabilities().get('logical_raid_level_1'), 'true', 'capability')
        ilo.delete_raid_configuration()
        ilo.reset_server()
        eq(ilo.read_raid_configuration()['logical_disks'], [], 'after the delete')
        try:
            ilo.delete_raid_configuration()
        except exception.IloLogicalDriveNotFoundError:
            pass
        else:
            raise AssertionError('a second delete found logical drives')
        ilo.hold_pwr_btn()

    @check('one-time and persistent boot devices')
    def boot_devices():
        ilo.set_one_time_boot('NETWORK')
        eq(ilo.get_one_time_boot(), 'NETWORK', 'one-time')
        ilo.update_persistent_boot(['HDD'])
        eq(ilo.get_persistent_boot_device(), 'HDD', 'persistent')
        eq(ilo.get_one_time_boot(), 'Normal', 'one-time after a persistent one')
        ilo.set_one_time_boot('UEFIHTTP')
        eq(ilo.get_one_time_boot(), 'UEFIHTTP', 'one-time UEFI HTTP')
        try:
            ilo.set_one_time_boot('FLOPPY')
        except exception.IloInvalidInputError:
            pass
        else:
            raise AssertionError('FLOPPY taken as a one-time boot device')

    @check('virtual media: insert, BOOT_ONCE, eject')
    def vmedia():
        ilo.insert_virtual_media(image, 'CDROM')
        ilo.set_vm_status('CDROM', 'BOOT_ONCE')
        eq(ilo.get_one_time_boot(), 'CDROM', 'one-time after BOOT_ONCE')
        ilo.set_vm_status('CDROM', 'NO_BOOT')
        eq(ilo.get_one_time_boot(), 'Normal', 'one-time after NO_BOOT')
        # Inserting again ejects first, as proliantutils does.
        ilo.insert_virtual_media(image, 'CDROM')
        ilo.eject_virtual_media('CDROM')
        ilo.eject_virtual_media('CDROM')  # nothing in: no request

    @check('BIOS settings: staged by PATCH, the HTTP boot URL by POST, the defaults')
    def bios():
        current = ilo.get_current_bios_settings(only_allowed_settings=False)
        eq(current.get('BootMode'), 'Uefi', 'BootMode')
        ilo.set_bios_settings({'ProcTurboMode': 'Disabled'}, only_allowed_settings=False)
        eq(ilo.get_pending_bios_settings(only_allowed_settings=False).get('ProcTurboMode'),
           'Disabled', 'pending ProcTurboMode')
        url = 'https://192.0.2.1/boot.efi'
        ilo.set_http_boot_url(url)
        eq(ilo.get_pending_bios_settings(only_allowed_settings=False).get('UrlBootFile'),
           url, 'pending UrlBootFile')
        defaults = ilo.get_default_bios_settings(only_allowed_settings=False)
        eq(defaults.get('ProcTurboMode'), 'Enabled', 'default ProcTurboMode')
        ilo.reset_bios_to_default()
        eq(ilo.get_pending_bios_settings(only_allowed_settings=False).get('ProcTurboMode'),
           'Enabled', 'pending ProcTurboMode after the reset to defaults')
        try:
            ilo.set_pending_boot_mode('legacy')
        except exception.IloError as e:
            if 'PropertyNotWritable' not in str(e):
                raise
        else:
            raise AssertionError('BootMode staged as a setting')

    @check('TLS certificates for HTTPS boot: added, then removed')
    def tls():
        pem = ca_pem()
        with tempfile.NamedTemporaryFile('w', suffix='.pem') as f:
            f.write(pem)
            f.flush()
            ilo.add_tls_certificate([f.name])
            ilo.remove_tls_certificate([f.name])

    @check('secure boot: read')
    def secure_boot():
        eq(ilo.get_secure_boot_mode(), False, 'secure boot')

    @check('power: the button, POST states, the POST refusal, set_host_power, NMI')
    def power():
        ilo.press_pwr_btn()
        eq(ilo.get_host_power_status(), 'ON', 'power after a press')
        eq(ilo.get_host_post_state(), 'InPost', 'POST state after the start')
        try:
            ilo.set_one_time_boot('HDD')
        except exception.IloError as e:
            if 'UnableToModifyDuringSystemPOST' not in str(e):
                raise
        else:
            raise AssertionError('a boot change taken in POST')
        ilo.inject_nmi()
        ilo.hold_pwr_btn()
        eq(ilo.get_host_power_status(), 'OFF', 'power after press and hold')
        eq(ilo.get_host_post_state(), 'PowerOff', 'POST state when off')
        ilo.set_host_power('ON')
        eq(ilo.get_host_power_status(), 'ON', 'set_host_power ON')
        # The start applied the staged settings.
        eq(ilo.get_bios_settings_result()['status'], 'success', 'settings result')
        ilo.reset_server()
        eq(ilo.get_host_power_status(), 'ON', 'after reset_server')

    for t in (identity, boot_mode, capabilities, boot_devices, vmedia, bios, tls,
              secure_boot, raid, power):
        t()
    failed = [n for n, e in RESULTS if e is not None]
    print('%d passed, %d failed' % (len(RESULTS) - len(failed), len(failed)), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
