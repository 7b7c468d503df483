#!/usr/bin/env python3
"""What real sushy does against each vendor profile of a running emulator.

    profiles.py --url http://127.0.0.1:PORT --profile NAME

The emulator serves one system with that profile (`--profile NAME`). sushy
drives the boot override the way Ironic asks it to; every request it sends
is recorded, so a check can say where sushy sent its PATCH (the System or
the settings object) and what the emulator did with it. Prints 'ok - ...'
or 'not ok - ...: WHY' per check and one 'N passed, M failed' line; exits 1
when a check failed.
"""

import argparse
import sys
import traceback
from urllib.parse import urlparse

import requests
import sushy
from sushy import exceptions as sushy_exc

URI = 'http://192.0.2.1/boot.efi'


class CheckFailed(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise CheckFailed(why)


class Run:
    def __init__(self, url):
        self.url = url.rstrip('/')
        self.root = sushy.Sushy(
            self.url, auth=sushy.auth.BasicAuth(username='admin', password='x'))
        self.requests = []
        session = self.root._conn._session
        session.hooks['response'].append(self._record)
        self.http = requests.Session()
        self.http.trust_env = False

    def _record(self, rsp, *args, **kwargs):
        self.requests.append((rsp.request.method, urlparse(rsp.request.url).path,
                              rsp.status_code, rsp.request.headers.get('If-Match')))

    def system(self):
        path = self.root.get_system_collection().members_identities[0]
        return self.root.get_system(path)

    def get(self, path):
        return self.http.get(self.url + path, timeout=10).json()

    def patches(self):
        return [(p, s, m) for (meth, p, s, m) in self.requests if meth == 'PATCH']

    def boot(self):
        return self.get(self.system().path)['Boot']

    def reset_log(self):
        self.requests = []


ISO = 'http://192.0.2.1/boot.iso'


def virtual_cd(r):
    s = r.system()
    manager = s.managers[0]
    return next(m for m in manager.virtual_media.get_members()
                if sushy.VIRTUAL_MEDIA_CD in m.media_types)


def media_round_trip(r):
    """sushy inserts and ejects; returns the requests it took."""
    r.reset_log()
    cd = virtual_cd(r)
    cd.insert_media(ISO)
    cd = virtual_cd(r)
    expect(cd.inserted and cd.image == ISO, f'inserted {cd.inserted} {cd.image}')
    cd.eject_media()
    cd = virtual_cd(r)
    expect(not cd.inserted, 'still inserted after eject')
    return [(m, p.rsplit('/', 1)[-1], st) for (m, p, st, _) in r.requests
            if m in ('POST', 'PATCH')]


def uefi_http_with_uri(r):
    s = r.system()
    s.set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_UEFI_HTTP,
                              enabled=sushy.BOOT_SOURCE_ENABLED_ONCE,
                              http_boot_uri=URI)


def check_generic(r):
    uefi_http_with_uri(r)
    expect([p for p, _, _ in r.patches()] == [r.system().path], f'{r.patches()}')
    b = r.boot()
    expect((b['BootSourceOverrideTarget'], b['HttpBootUri']) == ('UefiHttp', URI), f'{b}')


def check_sushy_tools(r):
    # The neutral BMC at sushy-tools' paths: the NICs by MAC with colons.
    check_generic(r)
    nics = r.system().ethernet_interfaces
    for nic in nics.get_members():
        expect(nic.identity == nic.mac_address and ':' in nic.identity,
               f'{nic.path}: Id {nic.identity}, MAC {nic.mac_address}')
    expect(nics.summary, f'{nics.summary}')


def check_openbmc(r):
    s = r.system()
    allowed = s.get_allowed_system_boot_source_values()
    expect(sushy.BOOT_SOURCE_TARGET_UEFI_HTTP not in allowed, f'{allowed}')
    try:
        uefi_http_with_uri(r)
    except sushy_exc.InvalidParameterValueError:
        pass
    else:
        raise CheckFailed('sushy sent UefiHttp that the BMC does not offer')
    expect(r.patches() == [], f'{r.patches()}')


def bios_route(r, attributes):
    """No HttpBootUri: sushy refuses the URI; the BIOS attributes carry it."""
    try:
        uefi_http_with_uri(r)
    except sushy_exc.MissingAttributeError:
        pass
    else:
        raise CheckFailed('sushy sent an HttpBootUri the BMC does not advertise')
    expect(r.patches() == [], f'nothing is sent: {r.patches()}')
    s = r.system()
    # At the next reset, as Ironic's BIOS interface asks where offered.
    s.bios.set_attributes(attributes, apply_time=sushy.APPLY_TIME_ON_RESET)
    r.system().set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_UEFI_HTTP,
                                       enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    pending = r.get(s.path + '/Bios/Settings')['Attributes']
    for k, v in attributes.items():
        expect(pending.get(k) == v, f'{k}: {pending.get(k)!r}')
    expect(r.boot()['BootSourceOverrideTarget'] == 'UefiHttp', f'{r.boot()}')


def check_idrac9(r):
    bios_route(r, {'HttpDev1EnDis': 'Enabled', 'HttpDev1Uri': URI})


def check_idrac10(r):
    s = r.system()
    # The allowed values come from the settings object only.
    allowed = s.get_allowed_system_boot_source_values()
    expect(sushy.BOOT_SOURCE_TARGET_UEFI_HTTP in allowed, f'{allowed}')
    expect('BootSourceOverrideTarget@Redfish.AllowableValues' not in r.boot(), 'on the System')
    r.reset_log()
    r.system().set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_PXE,
                                       enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    # Target and Enabled are not settings-object fields: the System.
    expect([p for p, _, _ in r.patches()] == [s.path], f'{r.patches()}')
    expect(r.boot()['BootSourceOverrideTarget'] == 'Pxe', f'{r.boot()}')
    r.reset_log()
    bios_route(r, {'HttpDev1EnDis': 'Enabled', 'HttpDev1Uri': URI})
    # A second power action while the first is in progress: 409, which
    # sushy leaves to its caller (Ironic retries it).
    r.system().reset_system(sushy.RESET_ON)
    try:
        r.system().reset_system(sushy.RESET_FORCE_OFF)
    except sushy_exc.HTTPError as e:
        expect(e.status_code == 409, f'{e.status_code}: {e}')
    else:
        raise CheckFailed('a power action while busy was taken')


def check_ilo5(r):
    tag = r.http.get(r.url + r.system().path, timeout=10).headers.get('ETag', '')
    expect(tag.startswith('W/'), f'ETag {tag!r}')
    bios_route(r, {'UrlBootFile': URI})
    # sushy's PATCH carried the weak tag as served, which iLO matches.
    sys_patches = [(s, m) for (p, s, m) in r.patches() if p == r.system().path]
    expect(len(sys_patches) == 1 and sys_patches[0][0] == 200
           and sys_patches[0][1].startswith('W/'), f'{r.patches()}')
    # Eject without a body is refused; sushy sends {} again.
    reqs = media_round_trip(r)
    expect(reqs == [('POST', 'VirtualMedia.InsertMedia', 204),
                    ('POST', 'VirtualMedia.EjectMedia', 415),
                    ('POST', 'VirtualMedia.EjectMedia', 204)], f'{reqs}')
    # In POST after a power-on, a boot change is refused; sushy does not
    # retry that one.
    r.system().reset_system(sushy.RESET_ON)
    try:
        r.system().set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_PXE,
                                           enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    except sushy_exc.BadRequestError as e:
        expect('UnableToModifyDuringSystemPOST' in str(e), str(e))
    else:
        raise CheckFailed('a boot change was taken during POST')


def check_ilo6(r):
    # HttpBootUri is advertised (null), so sushy sends it and the BMC refuses.
    try:
        uefi_http_with_uri(r)
    except sushy_exc.BadRequestError as e:
        expect('PropertyNotWritableOrUnknown' in str(e), str(e))
    else:
        raise CheckFailed('the iLO 6 BMC took HttpBootUri')
    expect(r.boot()['BootSourceOverrideTarget'] == 'None', 'nothing applied')
    r.reset_log()
    r.system().bios.set_attributes({'UrlBootFile': URI})
    r.system().set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_UEFI_HTTP,
                                       enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    expect(r.boot()['BootSourceOverrideTarget'] == 'UefiHttp', f'{r.boot()}')


def check_supermicro_x12(r):
    # sushy leaves Inserted/WriteProtected out at their defaults, which
    # this BMC refuses.
    reqs = media_round_trip(r)
    expect(reqs == [('POST', 'VirtualMedia.InsertMedia', 204),
                    ('POST', 'VirtualMedia.EjectMedia', 204)], f'{reqs}')
    # Cd becomes UsbCd on Supermicro.
    r.system().set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_CD,
                                       enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    expect(r.boot()['BootSourceOverrideTarget'] == 'UsbCd', f'{r.boot()}')
    try:
        r.system().set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_PXE)
    except sushy_exc.BadRequestError as e:
        expect('PropertyMissing' in str(e), str(e))
    else:
        raise CheckFailed('a Boot PATCH without Enabled was taken')
    r.system().set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_PXE,
                                       enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    expect(r.boot()['BootSourceOverrideTarget'] == 'Pxe', f'{r.boot()}')


def check_ami_asrockrack(r):
    # Credentials are demanded; sushy retries with none/none.
    reqs = media_round_trip(r)
    expect(reqs == [('POST', 'VirtualMedia.InsertMedia', 400),
                    ('POST', 'VirtualMedia.InsertMedia', 204),
                    ('POST', 'VirtualMedia.EjectMedia', 204)], f'{reqs}')
    s = r.system()
    sd = s.path + '/SD'
    # Without the Mode the future-state object refuses the override.
    try:
        s.set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_PXE,
                                  enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    except sushy_exc.BadRequestError as e:
        expect('PropertyMissing' in str(e), str(e))
    else:
        raise CheckFailed('a Boot PATCH without Mode was taken')
    r.reset_log()
    # As Ironic does for AMI: Target, Enabled and Mode together, which
    # sushy sends to the settings object with that object's ETag.
    r.system().set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_UEFI_HTTP,
                                       enabled=sushy.BOOT_SOURCE_ENABLED_ONCE,
                                       mode=sushy.BOOT_SOURCE_MODE_UEFI,
                                       http_boot_uri=URI)
    expect([(p, st) for p, st, _ in r.patches()] == [(sd, 200)], f'{r.patches()}')
    expect(all(m for _, _, m in r.patches()), 'If-Match sent')
    b = r.boot()
    expect((b['BootSourceOverrideTarget'], b['HttpBootUri']) == ('UefiHttp', URI), f'{b}')


def check_lenovo_xcc(r):
    # No actions: sushy inserts and ejects by PATCH.
    reqs = media_round_trip(r)
    expect(reqs == [('PATCH', 'Cd', 200), ('PATCH', 'Cd', 200)], f'{reqs}')
    s = r.system()
    r.reset_log()
    s.set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_UEFI_HTTP,
                              enabled=sushy.BOOT_SOURCE_ENABLED_ONCE,
                              http_boot_uri=URI)
    # Target and Enabled to /Pending, HttpBootUri to the System: two PATCHes.
    paths = sorted(p for p, st, _ in r.patches() if st == 200)
    expect(paths == sorted([s.path, s.path + '/Pending']), f'{r.patches()}')
    b = r.boot()
    expect((b['BootSourceOverrideTarget'], b['HttpBootUri']) == ('UefiHttp', URI), f'{b}')


def check_no_allowable_values(r):
    # sushy has nothing to check the target against and sends it anyway.
    uefi_http_with_uri(r)
    b = r.boot()
    expect('BootSourceOverrideTarget@Redfish.AllowableValues' not in b, f'{b}')
    expect((b['BootSourceOverrideTarget'], b['HttpBootUri']) == ('UefiHttp', URI), f'{b}')


def check_synthetic_strict_etag(r):
    r.system().set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_PXE,
                                       enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    # The weak tag as served is compared strongly: 412, then sushy's retry
    # with the strong form passes.
    sys_patches = [(s, m) for (p, s, m) in r.patches() if p == r.system().path]
    expect(len(sys_patches) == 2 and sys_patches[0][0] == 412
           and sys_patches[0][1].startswith('W/')
           and sys_patches[1] == (200, sys_patches[0][1][2:]), f'{r.patches()}')


CHECKS = {
    'generic': check_generic,
    'no-allowable-values': check_no_allowable_values,
    'openbmc': check_openbmc,
    'idrac9': check_idrac9,
    'idrac10': check_idrac10,
    'ilo5': check_ilo5,
    'ilo6': check_ilo6,
    'supermicro-x12': check_supermicro_x12,
    'ami-asrockrack': check_ami_asrockrack,
    'lenovo-xcc': check_lenovo_xcc,
    'sushy-tools': check_sushy_tools,
    'synthetic-strict-etag': check_synthetic_strict_etag,
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--url', required=True)
    p.add_argument('--profile', required=True, choices=sorted(CHECKS))
    p.add_argument('--system-id', help='the Id the system must have (fixed Ids)')
    a = p.parse_args()
    r = Run(a.url)
    try:
        if a.system_id:
            path = r.system().path
            expect(path == '/redfish/v1/Systems/' + a.system_id, f'system at {path}')
        CHECKS[a.profile](r)
    except Exception as e:  # noqa: BLE001 - reported, then counted
        detail = e if isinstance(e, CheckFailed) else traceback.format_exc()
        print(f'not ok - {a.profile}: {detail}')
        for req in r.requests:
            print(f'# {req}')
        print('0 passed, 1 failed')
        return 1
    print(f'ok - {a.profile}')
    print('1 passed, 0 failed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
