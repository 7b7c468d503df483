#!/usr/bin/env python3
"""Client-compatibility test: drive a running shoal-emulator with real sushy.

sushy (the Redfish library Ironic uses) performs every action; plain HTTP
GETs with basic auth then read back what the emulator reports, so a check
passes only when sushy's request and the emulator's resulting state agree.

    compat.py --url https://127.0.0.1:PORT --username admin --password PASS \
        [--insecure | --cacert CERT.pem] [--timeout 10] [--verbose]

Prints one line per check, 'ok - NAME' or 'not ok - NAME: WHY', then exactly
one line 'N passed, M failed'; exits 1 if any check failed, 2 on bad usage.
Warnings that sushy logs while it works (fallbacks it had to take, such as
a failed If-Match or a guessed URL) are shown as '# sushy: ...' lines.
"""

import argparse
import http.server
import json
import logging
import os
import queue
import sys
import threading
import time
import traceback
from urllib.parse import urljoin, urlparse

import requests
import sushy
import sushy.auth
from sushy import exceptions as sushy_exc

BOOT_URI = 'http://192.0.2.1/boot.iso'
MEDIA_URI = 'http://192.0.2.1/boot.iso'
BIOS_ATTR = 'ProcTurboMode'


class CheckFailed(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise CheckFailed(why)


class NoAuth(requests.auth.AuthBase):
    """Sends no Authorization header, overriding the session's basic auth."""

    def __call__(self, r):
        r.headers.pop('Authorization', None)
        return r


class WarningCollector(logging.Handler):
    """Keeps what sushy logs at WARNING and above, to show beside a check."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(f'{record.levelname} {record.getMessage()}')

    def drain(self):
        out, self.records = self.records, []
        return out


class Compat:
    def __init__(self, args):
        self.args = args
        self.base = args.url.rstrip('/')
        self.verify = False if args.insecure else (args.cacert or True)
        self.http = requests.Session()
        # No CA bundle or proxy from the environment: REQUESTS_CA_BUNDLE
        # would otherwise override verify=False set on the session.
        self.http.trust_env = False
        self.http.auth = (args.username, args.password)
        self.http.verify = self.verify
        self.http.headers['Accept'] = 'application/json'
        self.auth = None
        self.root = None
        self.system = None
        self.session_path = None
        self.session_token = None
        self.passed = 0
        self.failed = 0
        self.notes = []

    # ---- plain HTTP, independent of sushy ---------------------------------

    def url(self, path):
        return urljoin(self.base + '/', path)

    def get(self, path, **kw):
        return self.http.get(self.url(path), timeout=self.args.timeout, **kw)

    def get_json(self, path):
        rsp = self.get(path)
        expect(rsp.status_code == 200,
               f'GET {path} returned {rsp.status_code}: {rsp.text[:200]}')
        return rsp.json()

    def system_json(self):
        expect(self.system is not None, 'no system (an earlier check failed)')
        return self.get_json(self.system.path)

    def boot(self):
        return self.system_json().get('Boot') or {}

    def poll(self, what, fetch, done):
        """Re-read fetch() until done(value) or the timeout; return the value."""
        deadline = time.monotonic() + self.args.timeout
        while True:
            value = fetch()
            if done(value):
                return value
            if time.monotonic() > deadline:
                raise CheckFailed(
                    f'{what} not reached in {self.args.timeout}s, '
                    f'last seen {value!r}')
            time.sleep(0.2)

    def poll_power(self, state):
        return self.poll(f'PowerState {state}',
                         lambda: self.system_json().get('PowerState'),
                         lambda v: v == state)

    def session_members(self):
        coll = self.get_json('/redfish/v1/SessionService/Sessions')
        return [urlparse(m.get('@odata.id', '')).path.rstrip('/')
                for m in coll.get('Members', [])]

    # ---- sushy helpers -----------------------------------------------------

    def fresh_system(self):
        """Re-read the system so sushy's JSON and ETag are current.

        sushy decides what to PATCH from its cached copy (e.g. it only sends
        HttpBootUri: null when its copy shows a URI set), and uses the ETag
        of that copy for If-Match.
        """
        expect(self.system is not None, 'no system (an earlier check failed)')
        self.system.refresh()
        return self.system

    def expect_sushy_power(self, state):
        s = self.fresh_system()
        expect(s.power_state == sushy.PowerState(state),
               f'sushy reads power_state {s.power_state}')

    def power_cycle_to_on(self):
        """Reset so the system goes through a boot: ForceRestart if on, else On."""
        state = self.system_json().get('PowerState')
        if state == 'On':
            self.fresh_system().reset_system(sushy.RESET_TYPE_FORCE_RESTART)
        else:
            self.fresh_system().reset_system(sushy.RESET_TYPE_ON)
        self.poll_power('On')

    # ---- the checks, in order ---------------------------------------------

    def check_open_session(self):
        self.auth = sushy.auth.SessionAuth(username=self.args.username,
                                           password=self.args.password)
        self.root = sushy.Sushy(self.base, auth=self.auth, verify=self.verify,
                                read_timeout=self.args.timeout,
                                server_side_retries=1,
                                server_side_retries_delay=1)
        self.session_token = self.auth.get_session_key()
        uri = self.auth.get_session_resource_id()
        expect(self.session_token, 'sushy got no X-Auth-Token')
        expect(uri, 'sushy got no session URI (Location header or @odata.id)')
        self.session_path = urlparse(uri).path.rstrip('/')
        members = self.session_members()
        expect(self.session_path in members,
               f'session {self.session_path} not in Sessions {members}')

    def check_system(self):
        expect(self.root is not None, 'no service (an earlier check failed)')
        systems = self.root.get_system_collection()
        ids = list(systems.members_identities)
        expect(ids, 'system collection is empty')
        self.system = systems.get_member(ids[0])
        raw = self.system_json()
        s = self.system
        expect(s.identity and s.identity == raw.get('Id'),
               f'identity {s.identity!r} != Id {raw.get("Id")!r}')
        expect(s.uuid and s.uuid == raw.get('UUID'),
               f'uuid {s.uuid!r} != UUID {raw.get("UUID")!r}')
        expect(s.power_state is not None,
               f'power_state unmapped (PowerState {raw.get("PowerState")!r})')
        expect(s.boot is not None, 'no Boot object')
        allowed = s.boot.allowed_values
        if allowed is None:
            self.note('no BootSourceOverrideTarget@Redfish.AllowableValues: '
                      'sushy then allows every target and warns')
        for target in ('Pxe', 'UefiHttp', 'Cd', 'Hdd'):
            expect(allowed is None or target in allowed,
                   f'BootSourceOverrideTarget@Redfish.AllowableValues '
                   f'{allowed} lacks {target} (sushy refuses it client-side)')
        expect('HttpBootUri' in (raw.get('Boot') or {}),
               'Boot lacks HttpBootUri (sushy refuses an explicit URI then)')
        self.note(f'{len(ids)} systems; first {s.path} '
                  f'power {s.power_state.value}')

    def check_boot_http_uri(self):
        self.fresh_system().set_system_boot_options(
            target=sushy.BOOT_SOURCE_TARGET_UEFI_HTTP,
            enabled=sushy.BOOT_SOURCE_ENABLED_ONCE,
            http_boot_uri=BOOT_URI)
        boot = self.boot()
        expect(boot.get('BootSourceOverrideTarget') == 'UefiHttp',
               f'BootSourceOverrideTarget {boot.get("BootSourceOverrideTarget")!r}')
        expect(boot.get('BootSourceOverrideEnabled') == 'Once',
               f'BootSourceOverrideEnabled {boot.get("BootSourceOverrideEnabled")!r}')
        expect(boot.get('HttpBootUri') == BOOT_URI,
               f'HttpBootUri {boot.get("HttpBootUri")!r}')

    def check_boot_http_uri_cleared(self):
        self.fresh_system().set_system_boot_options(
            target=sushy.BOOT_SOURCE_TARGET_UEFI_HTTP,
            enabled=sushy.BOOT_SOURCE_ENABLED_ONCE,
            http_boot_uri=None)
        boot = self.boot()
        expect('HttpBootUri' in boot, 'Boot.HttpBootUri missing, want null')
        expect(boot['HttpBootUri'] is None,
               f'HttpBootUri {boot["HttpBootUri"]!r}, want null')
        expect(boot.get('BootSourceOverrideTarget') == 'UefiHttp'
               and boot.get('BootSourceOverrideEnabled') == 'Once',
               f'override changed: {boot}')

    def check_power_on_consumes_once(self):
        if self.system_json().get('PowerState') != 'Off':
            self.fresh_system().reset_system(sushy.RESET_TYPE_FORCE_OFF)
            self.poll_power('Off')
            boot = self.boot()
            expect(boot.get('BootSourceOverrideEnabled') == 'Once',
                   f'ForceOff alone changed the Once override: {boot}')
        self.fresh_system().reset_system(sushy.RESET_TYPE_ON)
        self.poll_power('On')
        self.expect_sushy_power('On')
        self.poll('Boot override consumed',
                  lambda: (self.boot().get('BootSourceOverrideEnabled'),
                           self.boot().get('BootSourceOverrideTarget')),
                  lambda v: v == ('Disabled', 'None'))

    def check_continuous_survives_restart(self):
        self.fresh_system().set_system_boot_options(
            target=sushy.BOOT_SOURCE_TARGET_PXE,
            enabled=sushy.BOOT_SOURCE_ENABLED_CONTINUOUS)
        boot = self.boot()
        expect(boot.get('BootSourceOverrideTarget') == 'Pxe'
               and boot.get('BootSourceOverrideEnabled') == 'Continuous',
               f'after PATCH: {boot}')
        self.power_cycle_to_on()
        boot = self.boot()
        expect(boot.get('BootSourceOverrideTarget') == 'Pxe'
               and boot.get('BootSourceOverrideEnabled') == 'Continuous',
               f'after ForceRestart: {boot}')
        s = self.fresh_system()
        expect(s.boot.target == sushy.BOOT_SOURCE_TARGET_PXE
               and s.boot.enabled == sushy.BOOT_SOURCE_ENABLED_CONTINUOUS,
               f'sushy reads target {s.boot.target} enabled {s.boot.enabled}')

    def check_virtual_media(self):
        managers = self.fresh_system().managers
        expect(managers, 'system has no Links.ManagedBy managers')
        cds = [vm for vm in managers[0].virtual_media.get_members()
               if sushy.VIRTUAL_MEDIA_CD in vm.media_types]
        expect(cds, f'no VirtualMedia with MediaTypes CD under {managers[0].path}')
        cd = cds[0]
        expect(cd.identity == 'Cd', f'CD device Id {cd.identity!r}, want "Cd"')
        via_system = [vm.identity for vm in self.system.virtual_media.get_members()]
        expect('Cd' in via_system,
               f'Systems/{{id}}/VirtualMedia lists {via_system}, no Cd')

        if self.get_json(cd.path).get('Inserted'):
            self.note('Cd already had media (a rerun?): ejecting it first')
            cd.eject_media()
            self.poll('Cd ejected', lambda: self.get_json(cd.path),
                      lambda d: d.get('Inserted') is False)
            cd.refresh()
        # sushy does not wait on a 202 task monitor here (it posts with
        # blocking=False), so poll the resource as Ironic would.
        cd.insert_media(MEDIA_URI, inserted=True, write_protected=True)
        raw = self.poll('Cd inserted', lambda: self.get_json(cd.path),
                        lambda d: d.get('Inserted') is True)
        expect(raw.get('Image') == MEDIA_URI, f'Image {raw.get("Image")!r}')
        expect(raw.get('WriteProtected') is not False,
               f'WriteProtected {raw.get("WriteProtected")!r}')
        cd.refresh()
        expect(cd.inserted is True and cd.image == MEDIA_URI,
               f'sushy reads inserted {cd.inserted!r} image {cd.image!r}')

        cd.eject_media()
        raw = self.poll('Cd ejected', lambda: self.get_json(cd.path),
                        lambda d: d.get('Inserted') is False)
        expect(raw.get('Image') in (None, ''), f'after eject Image {raw.get("Image")!r}')

    def check_bios_pending_then_applied(self):
        bios = self.fresh_system().bios
        raw_bios = self.get_json(bios.path)
        settings_path = (((raw_bios.get('@Redfish.Settings') or {})
                          .get('SettingsObject') or {}).get('@odata.id'))
        expect(settings_path, 'Bios lacks @Redfish.Settings.SettingsObject')
        old = (raw_bios.get('Attributes') or {}).get(BIOS_ATTR)
        expect(old in ('Enabled', 'Disabled'), f'{BIOS_ATTR} is {old!r}')
        new = 'Disabled' if old == 'Enabled' else 'Enabled'

        bios.set_attributes({BIOS_ATTR: new})
        pending = (self.get_json(settings_path).get('Attributes') or {})
        expect(pending.get(BIOS_ATTR) == new,
               f'Bios/Settings {BIOS_ATTR} {pending.get(BIOS_ATTR)!r}, want {new!r}')
        current = (self.get_json(bios.path).get('Attributes') or {})
        expect(current.get(BIOS_ATTR) == old,
               f'Bios changed before reset: {BIOS_ATTR} {current.get(BIOS_ATTR)!r}')
        expect((bios.pending_attributes or {}).get(BIOS_ATTR) == new,
               f'sushy pending_attributes {bios.pending_attributes!r}')

        self.power_cycle_to_on()
        self.poll(f'Bios {BIOS_ATTR} {new}',
                  lambda: (self.get_json(bios.path).get('Attributes') or {})
                  .get(BIOS_ATTR),
                  lambda v: v == new)
        bios = self.fresh_system().bios
        expect(bios.attributes.get(BIOS_ATTR) == new,
               f'sushy reads {BIOS_ATTR} {bios.attributes.get(BIOS_ATTR)!r}')

    def check_raid_volumes(self):
        """Ironic's RAID interface: delete the pass-through volume, create
        a volume at once, then delete it at the next reset (a TaskMonitor
        that completes when the machine starts)."""
        # Its own System object, as each Ironic call takes one: refreshing
        # a cached one re-reads cached volumes, which 404 once deleted.
        own = lambda: self.root.get_system(self.system.path)  # noqa: E731
        storage = own().storage.get_members()[0]
        volumes = storage.volumes
        support = volumes.operation_apply_time_support
        expect(support is not None and
               'OnReset' in support.supported_values,
               f'apply times {support and support.supported_values}')
        drive = storage.drives[0]
        for v in volumes.get_members():
            v.delete()
        volumes = own().storage.get_members()[0].volumes
        expect(volumes.members_identities == (), f'left {volumes.members_identities}')
        made = volumes.create({'RAIDType': 'RAID0', 'Name': 'os',
                               'Links': {'Drives': [{'@odata.id': drive.path}]}})
        expect(made is not None and made.raid_type == sushy.RAIDType.RAID0,
               f'created {made and made.raid_type}')
        expect(made.capacity_bytes == drive.capacity_bytes,
               f'capacity {made.capacity_bytes}, drive {drive.capacity_bytes}')
        monitor = made.delete(apply_time=sushy.APPLY_TIME_ON_RESET)
        expect(monitor is not None, 'OnReset delete gave no task monitor')
        left = self.get_json(volumes.path).get('Members')
        expect(len(left) == 1, f'deleted before the reset: {left}')
        self.power_cycle_to_on()
        self.poll('staged delete applied',
                  lambda: self.get_json(volumes.path).get('Members'),
                  lambda m: m == [])
        monitor.refresh()
        expect(not monitor.is_processing, 'task still running after the reset')

    def check_network_adapters(self):
        expect(self.system is not None, 'no system (an earlier check failed)')
        macs = sorted(n.mac_address.upper()
                      for n in self.system.ethernet_interfaces.get_members())
        expect(macs, 'the system has no EthernetInterfaces')
        chassis = self.system.managers[0].chassis[0]
        adapters = chassis.network_adapters.get_members()
        expect(len(adapters) == 1, f'{len(adapters)} adapters, not 1')
        adapter = adapters[0]
        ports = adapter.network_ports.get_members()
        functions = adapter.network_device_functions.get_members()
        expect(len(ports) == len(macs) == len(functions),
               f'{len(ports)} ports, {len(functions)} functions, '
               f'{len(macs)} NICs')
        got = sorted(a.upper() for p in ports
                     for a in p.associated_network_addresses)
        expect(got == macs, f'port addresses {got} != NIC MACs {macs}')
        got = sorted(f.ethernet.mac_address.upper() for f in functions)
        expect(got == macs, f'function MACs {got} != NIC MACs {macs}')
        version = adapter.controllers[0].firmware_package_version
        expect(version, 'no controller FirmwarePackageVersion')
        self.note(f'{adapter.path}: {len(ports)} ports')

    def check_bad_boot_target(self):
        before = self.boot()
        try:
            self.fresh_system().set_system_boot_options(target='Bogus')
        except sushy_exc.InvalidParameterValueError:
            self.note('target=Bogus: rejected client-side by sushy '
                      '(InvalidParameterValueError)')
        except sushy_exc.BadRequestError as e:
            self.note(f'target=Bogus: emulator answered 400 ({e.code})')
        else:
            raise CheckFailed('set_system_boot_options(target="Bogus") raised nothing')
        # sushy never sends an unknown target, so also send it through
        # sushy's own connector to see the emulator refuse it.
        s = self.fresh_system()
        try:
            s._conn.patch(s.path, data={'Boot': {'BootSourceOverrideTarget': 'Bogus'}},
                          etag=s._get_etag())
        except sushy_exc.BadRequestError as e:
            self.note(f'PATCH Bogus target: 400 {e.code}')
        except sushy_exc.HTTPError as e:
            raise CheckFailed(f'PATCH Bogus target: {e.status_code}, want 400')
        else:
            raise CheckFailed('PATCH Boot.BootSourceOverrideTarget "Bogus" accepted')
        after = self.boot()
        for key in ('BootSourceOverrideTarget', 'BootSourceOverrideEnabled'):
            expect(after.get(key) == before.get(key),
                   f'rejected PATCH changed {key}: {before.get(key)!r} -> {after.get(key)!r}')

    def check_event_subscription(self):
        """Ironic's vendor passthru path: the EventService through sushy,
        its types, a subscription made with Ironic's body (metal3's
        headers), an event from a real power change received on loopback
        (the emulator runs with --event-allow-net 127.0.0.0/8), a test
        event, and the subscription deleted."""
        got = queue.Queue()

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get('Content-Length', '0'))
                got.put((self.headers, json.loads(self.rfile.read(n))))
                self.send_response(204)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Receiver)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            es = self.root.get_event_service()
            types = es.get_event_types_for_subscription()
            expect(sushy.EventType.ALERT in types, f'event types {types}')
            dest = es.subscriptions.create({
                'Destination': f'http://127.0.0.1:{server.server_port}/events',
                'Protocol': 'Redfish', 'Context': 'ironic',
                'EventTypes': ['StatusChange', 'Alert'],
                'HttpHeaders': [{'X-Metal3': 'yes'}],
            })
            expect(dest is not None, 'create gave no subscription (201 + Location)')
            expect(dest.identity and dest.context == 'ironic',
                   f'subscription {dest.identity} {dest.context!r}')
            ids = [m.identity for m in es.subscriptions.get_members()]
            expect(dest.identity in ids, f'{dest.identity} not in {ids}')
            s = self.fresh_system()
            if s.power_state == sushy.PowerState.ON:
                s.reset_system(sushy.RESET_TYPE_FORCE_OFF)
            else:
                s.reset_system(sushy.RESET_TYPE_ON)
            headers, body = got.get(timeout=self.args.timeout)
            expect(headers.get('X-Metal3') == 'yes', f'headers {dict(headers)}')
            ev = body['Events'][0]
            expect(ev['MessageId'].split('.')[-1] in
                   ('ResourcePoweredOn', 'ResourcePoweredOff', 'ResourcePoweringOn',
                    'ResourcePoweringOff'), f'event {ev}')
            expect(body.get('Context') == 'ironic', f'Context {body.get("Context")!r}')
            es.submit_test_event('1', '2026-01-01T00:00:00+00:00', 'Alert',
                                 'from sushy', [], 'ResourceEvent.1.3.0.TestMessage',
                                 self.system.path, 'OK')
            while True:
                _, body = got.get(timeout=self.args.timeout)
                if body['Events'][0].get('Message') == 'from sushy':
                    break
            dest.delete()
            rsp = self.get(dest.path)
            expect(rsp.status_code == 404, f'deleted subscription: {rsp.status_code}')
        finally:
            server.shutdown()

    def check_close_session(self):
        expect(self.auth is not None and self.session_path, 'no session was opened')
        self.auth.close()
        expect(self.auth.get_session_resource_id() is None,
               'sushy kept its session after close()')
        members = self.session_members()
        expect(self.session_path not in members,
               f'session {self.session_path} still in Sessions {members}')
        rsp = self.get(self.session_path)
        expect(rsp.status_code == 404,
               f'GET closed session returned {rsp.status_code}, want 404')
        rsp = self.http.get(self.url('/redfish/v1/Systems'), auth=NoAuth(),
                            timeout=self.args.timeout,
                            headers={'X-Auth-Token': self.session_token})
        expect(rsp.status_code == 401,
               f'closed session token still works: {rsp.status_code}')

    # ---- runner ------------------------------------------------------------

    def note(self, text):
        """A '# ' line shown after the current check's result line."""
        self.notes.append(text)

    CHECKS = [
        ('open service with SessionAuth, session listed', check_open_session),
        ('system collection and system properties', check_system),
        ('boot override UefiHttp Once with HttpBootUri', check_boot_http_uri),
        ('boot override with http_boot_uri=None clears HttpBootUri',
         check_boot_http_uri_cleared),
        ('power on consumes the Once override', check_power_on_consumes_once),
        ('Pxe Continuous survives ForceRestart', check_continuous_survives_restart),
        ('virtual media insert and eject on Cd', check_virtual_media),
        ('BIOS set_attributes pending until reset', check_bios_pending_then_applied),
        ('RAID volumes: delete, create, delete OnReset', check_raid_volumes),
        ('chassis network adapters match the NICs', check_network_adapters),
        ('bad boot target is refused', check_bad_boot_target),
        ('event subscription, a power event received, deleted', check_event_subscription),
        ('close session removes it', check_close_session),
    ]

    def run(self, warnings):
        for name, check in self.CHECKS:
            why = None
            try:
                check(self)
            except CheckFailed as e:
                why = str(e)
            except Exception as e:  # sushy/requests errors are failures too
                why = f'{type(e).__name__}: {e}'
                if self.args.verbose:
                    traceback.print_exc()
            logged = warnings.drain()
            # sushy quietly retries a PATCH without If-Match after a 412.
            # It sent the ETag of a fresh GET (or, for Bios/Settings, the
            # ETag inside @Redfish.Settings), so a 412 is the emulator's bug.
            refused = [w for w in logged if 'returned code 412' in w]
            if why is None and refused:
                why = ("a PATCH's If-Match got 412 and sushy retried "
                       'without it (see the sushy lines)')
            self.report(name, why)
            for line in self.notes + [f'sushy: {w}' for w in logged]:
                line = ' '.join(line.split())
                print(f'# {line[:300]}{"..." if len(line) > 300 else ""}', flush=True)
            self.notes = []
        print(f'{self.passed} passed, {self.failed} failed', flush=True)
        return 1 if self.failed else 0

    def report(self, name, why):
        if why is None:
            self.passed += 1
            print(f'ok - {name}', flush=True)
        else:
            self.failed += 1
            print(f'not ok - {name}: {" ".join(why.split())}', flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--url', required=True, help='e.g. https://127.0.0.1:8443')
    p.add_argument('--username', required=True)
    p.add_argument('--password', required=True)
    tls = p.add_mutually_exclusive_group()
    tls.add_argument('--insecure', action='store_true',
                     help='do not verify the TLS certificate')
    tls.add_argument('--cacert', help='CA bundle to verify the certificate with')
    p.add_argument('--timeout', type=float, default=10.0,
                   help='seconds to wait for a state change or a reply (10)')
    p.add_argument('--verbose', action='store_true',
                   help="sushy's debug log (every request) and tracebacks on stderr")
    args = p.parse_args(argv)
    # sushy's requests session trusts the environment: never let a proxy
    # setting send the emulator's traffic anywhere but where --url says.
    host = urlparse(args.url).hostname or ''
    for var in ('NO_PROXY', 'no_proxy'):
        os.environ[var] = ','.join(filter(None, [os.environ.get(var), host]))

    logging.basicConfig(stream=sys.stderr,
                        level=logging.DEBUG if args.verbose else logging.CRITICAL,
                        format='%(levelname)s %(name)s: %(message)s')
    warnings = WarningCollector()
    sushy_log = logging.getLogger('sushy')
    sushy_log.setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    sushy_log.addHandler(warnings)
    sushy_log.propagate = args.verbose
    if args.insecure:
        import urllib3
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    return Compat(args).run(warnings)


if __name__ == '__main__':
    sys.exit(main())
