#!/usr/bin/env python3
"""The harness's `ironic` driver: drives a standalone Ironic through its API
(python-ironicclient, no authentication) the way an operator or metal3 does.

    ironic_node.py --api URL --log FILE enroll --name N --bmc URL --system ID
        --mac MAC --boot-interface IFACE [--property K=V ...]
        [--driver ipmi|idrac|ilo5] [--ipmi-address HOST --ipmi-port PORT]
        [--ilo-address HOST:PORT --ilo-verify-ca PEM]
        [--console-port PORT] [--deploy-interface direct]
        [--driver-info K=V ...] [--inspect redfish|agent|idrac-redfish|ilo ...]
        [--clean-step JSON ...] [--raid-interface I --target-raid-config JSON]
        [--subscribe URL] [--firmware-interface redfish [--firmware-expect C=V ...]]
    ironic_node.py --api URL --log FILE console --name N --out FILE
    ironic_node.py --api URL --log FILE deploy --name N [--instance K=V ...]
    ironic_node.py --api URL --log FILE undeploy --name N
    ironic_node.py --api URL --log FILE rebuild --name N
    ironic_node.py --api URL --log FILE set-boot-interface --name N --boot-interface IFACE
    ironic_node.py --api URL --log FILE wait-api

enroll creates the node (redfish hardware type, or ipmi with ipmitool power
and management against the BMC's IPMI listener; the ramdisk deploy
interface, or direct: ironic-python-agent writes the image, with
--driver-info naming its deploy_kernel and deploy_ramdisk) and a port per
MAC, then takes it through manage and provide to `available` (with
automated cleaning, if Ironic is configured so, on the way); each --inspect
runs inspection with that inspect interface while the node is manageable
and prints `IRONIC-INSPECTED <json>` (the interface, the node's properties,
its stored inventory and its ports' MACs); the --clean-steps (each
`{"interface": .., "step": .., "args": {..}}`) then run as one manual
cleaning, which must bring the node back to manageable, and
`IRONIC-CLEANED <name> <steps>` is printed; with --target-raid-config (set
before the cleaning; the node's raid_interface --raid-interface) the node's
raid_config afterwards is printed as `IRONIC-RAID <json>` and must hold the
target's RAID levels if raid.create_configuration ran last, no logical disk
if raid.delete_configuration did; with --firmware-interface (the node's,
for firmware.update clean steps) the components Ironic recorded after the
cleaning are printed as `IRONIC-FIRMWARE <json>` and each --firmware-expect
COMPONENT=VERSION must be among them as its current_version (`nic` stands
for every `nic:<id>`); with --subscribe the node's vendor
interface is redfish and, once it is available, an event subscription to
URL is created, listed, read and deleted through Ironic's vendor passthru
as metal3's BMCEventSubscription does (each checked by the next call;
`IRONIC-SUBSCRIPTION <name> <id>` is printed); with --console-port the node's console interface is
ipmitool-socat (an IPMI Serial-over-LAN console, which redfish nodes may
have too) on that TCP port, and the console is enabled. console connects
to the console Ironic serves, prints `IRONIC-CONSOLE <url>`, then copies
what it shows into --out until it is stopped (SIGTERM) or --timeout
passes. deploy sets instance_info and deploys, waiting for `active`;
undeploy waits for `available` again (through cleaning, if on); rebuild
has the agent write the image again and waits for `active`. Every API response the script acts on
is appended to --log as a JSON line. Failures exit 1 with Ironic's
last_error on stderr (and `IRONIC-ERROR <text>` on stdout).
"""

import argparse
import json
import signal
import socket
import sys
import time

from ironicclient import client
from ironicclient.common.apiclient import exceptions as api_exc


class Driver:
    def __init__(self, api, log):
        self.ic = client.get_client(1, endpoint=api, auth_type='none',
                                    os_ironic_api_version='latest')
        self.log = log

    def record(self, what, obj):
        data = obj.to_dict() if hasattr(obj, 'to_dict') else obj
        with open(self.log, 'a') as f:
            f.write(json.dumps({'t': round(time.time(), 3), 'what': what,
                                'response': data}, default=str) + '\n')

    def node(self, name):
        n = self.ic.node.get(name)
        self.record('GET node ' + name, n)
        return n

    def last_error(self, name, node):
        """The node's last_error, else the newest error of its history
        (Ironic 39 clears last_error as a failed deploy tears down; the
        history keeps what the step reported)."""
        if node.last_error:
            return node.last_error
        try:
            events = self.ic.node.get_history_list(name, detail=True)
        except api_exc.HttpError:
            return None
        self.record('GET history', events)
        errors = [e for e in events if e.get('severity') == 'ERROR']
        errors.sort(key=lambda e: e.get('created_at') or '')
        return errors[-1].get('event') if errors else None

    def fail(self, name, why):
        n = self.node(name)
        error = self.last_error(name, n)
        text = '%s: %s' % (why, error) if error else why
        print('IRONIC-ERROR ' + ' '.join(text.split()), flush=True)
        sys.exit('ironic_node: %s: %s (provision_state %s, last_error: %s)'
                 % (name, why, n.provision_state, error))

    def wait(self, name, target, limit, failed=('deploy failed', 'clean failed',
                                                'inspect failed', 'error',
                                                'enroll')):
        """Polls until provision_state is `target` (with no transition
        pending); fails on an error state or at the deadline, with the
        node's last_error."""
        deadline = time.monotonic() + limit
        seen = None
        while True:
            n = self.ic.node.get(name)
            state = n.provision_state
            if state != seen:
                self.record('state ' + str(state), n)
                print('IRONIC-STATE %s %s' % (name, state), flush=True)
                seen = state
            if state == target and not n.target_provision_state:
                return n
            if state in failed and state != target:
                self.fail(name, 'reached %s instead of %s' % (state, target))
            if time.monotonic() > deadline:
                self.fail(name, 'not %s after %d s' % (target, limit))
            time.sleep(1)

    def act(self, name, verb, target, limit, **kw):
        try:
            self.ic.node.set_provision_state(name, verb, **kw)
        except api_exc.HttpError as e:
            self.record('%s refused' % verb, {'error': str(e)})
            print('IRONIC-ERROR ' + ' '.join(str(e).split()), flush=True)
            sys.exit('ironic_node: %s %s: %s' % (verb, name, e))
        self.record('provision ' + verb, {'node': name, 'args': kw})
        return self.wait(name, target, limit)


def console_on(drv, name):
    """Enables the node's console; its console info once it is up."""
    drv.ic.node.set_console_mode(name, True)
    deadline = time.monotonic() + 60
    while True:
        c = drv.ic.node.get_console(name)
        if c.get('console_enabled') and (c.get('console_info') or {}).get('url'):
            drv.record('GET console', c)
            return c
        if time.monotonic() > deadline:
            drv.fail(name, 'console not enabled after 60 s: %r' % (c,))
        time.sleep(0.5)


def capture(drv, name, out, limit):
    """Copies what the node's (enabled) console shows into `out` until
    SIGTERM or `limit` seconds."""
    url = console_on(drv, name)['console_info']['url']
    host, port = url.split('://', 1)[1].rsplit(':', 1)
    deadline = time.monotonic() + 30
    while True:
        try:
            sock = socket.create_connection((host.strip('[]'), int(port)), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    print('IRONIC-CONSOLE ' + url, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    end = time.monotonic() + limit
    sock.settimeout(1)
    with open(out, 'ab', buffering=0) as f:
        while time.monotonic() < end:
            try:
                data = sock.recv(4096)
            except socket.timeout:
                continue
            if not data:
                break
            f.write(data)


def inspect(drv, name, iface, limit):
    """Inspects the manageable node through `iface`; prints what Ironic
    learnt: properties, the inventory it stored, the ports' MACs."""
    n = drv.ic.node.update(name, [{'op': 'replace', 'path': '/inspect_interface',
                                   'value': iface}])
    drv.record('PATCH node', n)
    n = drv.act(name, 'inspect', 'manageable', limit)
    try:
        inventory = drv.ic.node.get_inventory(name)
        drv.record('GET inventory', inventory)
        inventory = inventory.get('inventory', inventory)
    except api_exc.HttpError as e:
        inventory = {'error': str(e)}
    ports = [p.address for p in drv.ic.port.list(node=name, fields=['address'])]
    print('IRONIC-INSPECTED ' + json.dumps({
        'interface': iface, 'properties': n.properties,
        'inventory': inventory, 'ports': ports}), flush=True)


def pairs(items):
    out = {}
    for item in items:
        k, sep, v = item.partition('=')
        if not sep:
            sys.exit('ironic_node: %r is not KEY=VALUE' % item)
        out[k] = v
    return out


def check_raid(drv, name, target, steps):
    """Ironic's raid_config after the cleaning against what its last RAID
    step was to leave: the target's RAID levels, or no logical disk."""
    n = drv.node(name)
    have = sorted(str(d.get('raid_level')) for d in n.raid_config.get('logical_disks', []))
    print('IRONIC-RAID %s' % json.dumps(n.raid_config), flush=True)
    last = [s['step'] for s in steps if s['interface'] == 'raid'][-1]
    want = (sorted(str(d['raid_level']) for d in target['logical_disks'])
            if last == 'create_configuration' else [])
    if have != want:
        print('IRONIC-ERROR raid_config holds RAID levels %s, not %s after raid.%s'
              % (have, want, last), flush=True)
        sys.exit('ironic_node: raid_config holds RAID levels %s, not %s after raid.%s'
                 % (have, want, last))


def check_firmware(drv, name, expect):
    """The firmware components Ironic recorded (GET /v1/nodes/N/firmware)
    against the versions the updates were to leave."""
    have = drv.ic.node.list_firmware_components(name)
    drv.record('GET firmware', have)
    print('IRONIC-FIRMWARE %s' % json.dumps(have, default=str), flush=True)
    current = {}
    for c in have:
        key = 'nic' if c['component'].startswith('nic:') else c['component']
        current.setdefault(key, []).append(c.get('current_version'))
    wrong = ['%s is %s, not %s' % (k, current.get(k, 'unrecorded'), v)
             for k, v in sorted(expect.items())
             if not current.get(k) or any(x != v for x in current[k])]
    if wrong:
        print('IRONIC-ERROR firmware components: ' + '; '.join(wrong), flush=True)
        sys.exit('ironic_node: firmware components: ' + '; '.join(wrong))


def subscriptions(drv, api, name, dest):
    """Ironic's redfish vendor passthru for BMC event subscriptions, called
    as metal3 calls it (gophercloud: JSON bodies, the DELETE's too, which
    ironicclient cannot send): create, list, read, delete."""
    import requests
    url = '%s/v1/nodes/%s/vendor_passthru' % (api.rstrip('/'), name)
    headers = {'X-OpenStack-Ironic-API-Version': 'latest'}

    def call(method, vendor_method, body=None):
        r = requests.request(method, url, params={'method': vendor_method},
                             json=body, headers=headers, timeout=120)
        data = r.json() if r.content else None
        drv.record('%s passthru %s %d' % (method, vendor_method, r.status_code), data)
        if r.status_code >= 400:
            print('IRONIC-ERROR ' + ' '.join(r.text.split()), flush=True)
            sys.exit('ironic_node: passthru %s: HTTP %d' % (vendor_method, r.status_code))
        return data

    def listed():
        members = call('GET', 'get_all_subscriptions').get('Members', [])
        return [m['@odata.id'].rstrip('/').rsplit('/', 1)[-1] for m in members]

    made = call('POST', 'create_subscription',
                {'Destination': dest, 'Context': 'metal3',
                 'HttpHeaders': [{'X-Metal3-Host': name}]})
    sid = made.get('Id')
    if not sid or made.get('Destination') != dest:
        sys.exit('ironic_node: create_subscription answered %r' % made)
    if sid not in listed():
        sys.exit('ironic_node: subscription %s not in get_all_subscriptions' % sid)
    got = call('GET', 'get_subscription', {'id': sid})
    if got.get('Id') != sid or got.get('Context') != 'metal3':
        sys.exit('ironic_node: get_subscription %s answered %r' % (sid, got))
    call('DELETE', 'delete_subscription', {'id': sid})
    if sid in listed():
        sys.exit('ironic_node: subscription %s still listed after its delete' % sid)
    print('IRONIC-SUBSCRIPTION %s %s created, listed, read, deleted' % (name, sid),
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--api', required=True)
    p.add_argument('--log', required=True)
    p.add_argument('--timeout', type=int, default=300)
    sub = p.add_subparsers(dest='action', required=True)
    e = sub.add_parser('enroll')
    e.add_argument('--name', required=True)
    e.add_argument('--bmc', required=True)
    e.add_argument('--system', required=True)
    e.add_argument('--mac', required=True)
    e.add_argument('--boot-interface', required=True)
    e.add_argument('--property', action='append', default=[])
    e.add_argument('--driver', choices=('redfish', 'ipmi', 'idrac', 'ilo5'), default='redfish')
    e.add_argument('--ilo-address', help='the iLO as HOST:PORT (ilo5)')
    e.add_argument('--ilo-verify-ca', help="the CA the iLO's certificate is checked against (ilo5)")
    e.add_argument('--ipmi-address')
    e.add_argument('--ipmi-port', type=int, default=623)
    e.add_argument('--console-port', type=int)
    e.add_argument('--deploy-interface', choices=('ramdisk', 'direct'),
                   default='ramdisk')
    e.add_argument('--driver-info', action='append', default=[])
    e.add_argument('--inspect', action='append', default=[],
                   choices=('redfish', 'agent', 'idrac-redfish', 'ilo'))
    e.add_argument('--clean-step', action='append', default=[], type=json.loads,
                   help='a manual clean step, as JSON: run while manageable')
    e.add_argument('--raid-interface', help="the node's raid_interface")
    e.add_argument('--target-raid-config', type=json.loads,
                   help="the node's target_raid_config, as JSON")
    e.add_argument('--subscribe', help='an event destination, through the vendor passthru')
    e.add_argument('--firmware-interface', help="the node's firmware_interface")
    e.add_argument('--firmware-expect', action='append', default=[],
                   help='COMPONENT=VERSION Ironic must record after the cleaning')
    c = sub.add_parser('console')
    c.add_argument('--name', required=True)
    c.add_argument('--out', required=True)
    d = sub.add_parser('deploy')
    d.add_argument('--name', required=True)
    d.add_argument('--instance', action='append', default=[])
    u = sub.add_parser('undeploy')
    u.add_argument('--name', required=True)
    r = sub.add_parser('rebuild')
    r.add_argument('--name', required=True)
    sub.add_parser('wait-api', help='exits 0 once the API answers')
    s = sub.add_parser('set-boot-interface')
    s.add_argument('--name', required=True)
    s.add_argument('--boot-interface', required=True)
    a = p.parse_args()
    # A hard deadline over everything (an API call that never returns
    # included): the harness waits for this process.
    signal.signal(signal.SIGALRM, lambda *_: sys.exit(
        'ironic_node: %s: no result within %d s' % (a.action, a.timeout + 60)))
    signal.alarm(a.timeout + 60)
    drv = Driver(a.api, a.log)
    if a.action == 'wait-api':
        deadline = time.monotonic() + a.timeout
        while True:
            try:
                drv.ic.node.list(limit=1)
                return
            except Exception as e:  # not up yet: refused, reset, 503
                if time.monotonic() > deadline:
                    sys.exit('ironic_node: the API at %s does not answer: %s' % (a.api, e))
                time.sleep(0.5)

    if a.action == 'enroll':
        props = pairs(a.property)
        info = {}
        if a.driver in ('redfish', 'idrac'):
            info.update({'redfish_address': a.bmc,
                         'redfish_system_id': '/redfish/v1/Systems/' + a.system,
                         'redfish_username': 'admin',
                         'redfish_password': 'password',
                         'redfish_verify_ca': False})
        if a.driver == 'ilo5':
            if not a.ilo_address:
                sys.exit('ironic_node: an ilo5 node needs --ilo-address')
            info.update({'ilo_address': a.ilo_address,
                         'ilo_username': 'admin',
                         'ilo_password': 'password',
                         'ilo_verify_ca': a.ilo_verify_ca or True})
        if a.driver == 'ipmi' or a.console_port:
            if not a.ipmi_address:
                sys.exit('ironic_node: an ipmi node or console needs --ipmi-address')
            info.update({'ipmi_address': a.ipmi_address,
                         'ipmi_port': a.ipmi_port,
                         'ipmi_username': 'admin',
                         'ipmi_password': 'password'})
        info.update(pairs(a.driver_info))
        extra = {}
        if a.console_port:
            info['ipmi_terminal_port'] = a.console_port
            extra['console_interface'] = 'ipmitool-socat'
        if a.raid_interface:
            extra['raid_interface'] = a.raid_interface
        if a.firmware_interface:
            extra['firmware_interface'] = a.firmware_interface
        if a.subscribe:
            extra['vendor_interface'] = 'redfish'
            if a.driver != 'redfish':
                sys.exit('ironic_node: --subscribe is the redfish vendor passthru')
        node = drv.ic.node.create(
            name=a.name, driver=a.driver, deploy_interface=a.deploy_interface,
            boot_interface=a.boot_interface, driver_info=info,
            properties=props, **extra)
        drv.record('POST node', node)
        port = drv.ic.port.create(node_uuid=node.uuid, address=a.mac)
        drv.record('POST port', port)
        drv.act(a.name, 'manage', 'manageable', a.timeout)
        for iface in a.inspect:
            inspect(drv, a.name, iface, a.timeout)
        if a.target_raid_config:
            drv.ic.node.set_target_raid_config(a.name, a.target_raid_config)
            drv.record('PUT target_raid_config', a.target_raid_config)
        if a.clean_step:
            n = drv.act(a.name, 'clean', 'manageable', a.timeout, cleansteps=a.clean_step)
            print('IRONIC-CLEANED %s %s' % (a.name, json.dumps(
                [s['interface'] + '.' + s['step'] for s in a.clean_step])), flush=True)
        if a.target_raid_config:
            check_raid(drv, a.name, a.target_raid_config, a.clean_step)
        if a.firmware_interface:
            check_firmware(drv, a.name, pairs(a.firmware_expect))
        drv.act(a.name, 'provide', 'available', a.timeout)
        if a.subscribe:
            subscriptions(drv, a.api, a.name, a.subscribe)
        if a.console_port:
            console_on(drv, a.name)
    elif a.action == 'deploy':
        patch = [{'op': 'add', 'path': '/instance_info/' + k, 'value': v}
                 for k, v in pairs(a.instance).items()]
        if patch:
            drv.record('PATCH node', drv.ic.node.update(a.name, patch))
        drv.act(a.name, 'active', 'active', a.timeout)
    elif a.action == 'console':
        capture(drv, a.name, a.out, a.timeout)
        return
    elif a.action == 'undeploy':
        drv.act(a.name, 'deleted', 'available', a.timeout)
    elif a.action == 'rebuild':
        drv.act(a.name, 'rebuild', 'active', a.timeout)
    elif a.action == 'set-boot-interface':
        n = drv.ic.node.update(a.name, [{'op': 'replace', 'path': '/boot_interface',
                                         'value': a.boot_interface}])
        drv.record('PATCH node', n)
    n = drv.node(a.name)
    print('IRONIC-DONE %s %s %s power %s' % (a.action, a.name, n.provision_state,
                                             n.power_state), flush=True)


if __name__ == '__main__':
    main()
