#!/usr/bin/env python3
"""The fleet benchmark's Ironic side: enrolls many BMCs in a standalone
Ironic (no authentication) with the redfish hardware type and takes them
all through manage (power and management validated, power synced),
inspect (redfish, out of band) and provide (no cleaning) to `available`,
as an operator bringing a rack in does, timing each phase.

    ironic_fleet.py --api URL --nodes FILE [--timeout S] [--workers N]

FILE is a JSON list of {"name", "address", "system_id" (or null),
"username", "password"}. Prints `PHASE <name> begin` and `PHASE <name> end`
as each phase starts and ends (the caller measures the BMC side's CPU
there), then one line `FLEET <json>`: the wall time of each phase, how
many nodes reached its state, and the first errors.
"""

import argparse
import concurrent.futures
import json
import sys
import threading
import time

import requests

HEADERS = {'X-OpenStack-Ironic-API-Version': '1.87'}


def transient(r):
    """What Ironic's own client retries: a node locked by the conductor
    (409), the service busy (503), and with SQLite, as metal3 runs Ironic,
    a database locked by another writer."""
    return r.status_code in (409, 503) or (
        r.status_code == 500 and 'database is locked' in r.text)


class Unanswered(Exception):
    """Ironic's API has stopped answering: what is left of the phase is
    not asked (every request would wait out its timeout)."""


class Breaker:
    """Counts requests in a row that Ironic's API did not answer (timed
    out, connection refused or reset). Past `limit` of them the API is
    taken as gone: a phase of 1,000 requests each waiting two minutes
    would otherwise hold the run for hours."""

    def __init__(self, limit=8):
        self.limit = limit
        self.misses = 0
        self.lock = threading.Lock()

    def open(self):
        with self.lock:
            return self.misses >= self.limit

    def record(self, answered):
        with self.lock:
            self.misses = 0 if answered else self.misses + 1


BREAKER = Breaker()


def call(s, method, url, **kw):
    if BREAKER.open():
        raise Unanswered(f'{method} {url}: not sent, Ironic\'s API stopped answering')
    for attempt in range(60):
        try:
            r = s.request(method, url, headers=HEADERS, timeout=120, **kw)
        except requests.RequestException:
            BREAKER.record(False)
            raise
        BREAKER.record(True)
        if not transient(r):
            break
        time.sleep(min(0.2 * (attempt + 1), 2))
    if r.status_code >= 400:
        raise RuntimeError(f'{method} {url}: {r.status_code} {r.text[:300]}')
    return r.json() if r.content else None


def nodes_state(s, api):
    """Every node, page by page (the API gives at most 1000 at a time)."""
    nodes, params = [], {'fields': 'uuid,provision_state,target_provision_state,'
                                   'last_error,inspection_finished_at',
                         'limit': 1000}
    while True:
        body = call(s, 'GET', f'{api}/v1/nodes', params=params)
        nodes.extend(body['nodes'])
        if len(body['nodes']) < params['limit']:
            return nodes
        params['marker'] = body['nodes'][-1]['uuid']


# Each phase: the target, whether a node has finished it, whether it failed.
# A node is polled right after its request, before Ironic moved it: being in
# the end state is not enough where the phase starts there too.
PHASES = [
    ('manage', 'manage',
     lambda n: n['provision_state'] == 'manageable',
     lambda n: n['provision_state'] == 'enroll' and n['last_error']),
    ('inspect', 'inspect',
     lambda n: n['provision_state'] == 'manageable' and n['inspection_finished_at'],
     lambda n: n['provision_state'] == 'inspect failed'),
    ('provide', 'provide',
     lambda n: n['provision_state'] == 'available',
     lambda n: n['provision_state'] == 'clean failed'),
]


def mark(name, edge):
    print(f'PHASE {name} {edge}', flush=True)


def phase(s, api, pool, uuids, target, done, failed, timeout, every):
    """One phase over `uuids`, the nodes' states polled `every` seconds. A
    request Ironic does not answer (an overloaded API times out) is an
    error of the phase, not the end of the run: the node's state, polled,
    says whether the request was taken. Once the API has stopped answering
    (see `Breaker`) the phase ends with what it has."""
    start = time.monotonic()

    def ask(u):
        try:
            call(s, 'PUT', f'{api}/v1/nodes/{u}/states/provision',
                 json={'target': target})
        except (RuntimeError, Unanswered, requests.RequestException) as e:
            return u, f'{target} request: {e}'[:200]
        return u, None

    refused = {u: e for u, e in pool.map(ask, uuids) if e}
    asked = list(refused.values())

    # A request that timed out may still be taken: a minute's grace.
    settled = time.monotonic() + 60

    def not_taken(n):
        # Refused (a node Ironic kept locked past every retry, say) and
        # never moved: nothing will move it, so it is not waited for.
        return (n['uuid'] in refused and not n['target_provision_state']
                and not done(n) and time.monotonic() > settled)

    deadline = time.monotonic() + timeout
    wanted = set(uuids)
    ok, bad = [], []
    while True:
        try:
            states = [n for n in nodes_state(s, api) if n['uuid'] in wanted]
        except (RuntimeError, requests.RequestException):
            states = None
        except Unanswered:
            break
        if states is not None:
            ok = [n for n in states if done(n)]
            bad = [n for n in states if not done(n) and (failed(n) or not_taken(n))]
            if len(ok) + len(bad) == len(wanted):
                break
        if time.monotonic() > deadline:
            break
        time.sleep(every)
    errors = sorted({(n.get('last_error') or 'no last_error')[:200] for n in bad})
    return {
        'secs': round(time.monotonic() - start, 2),
        'ok': len(ok),
        'failed': len(bad),
        'stuck': len(wanted) - len(ok) - len(bad),
        'errors': (sorted(set(asked)) + errors)[:3],
    }, [n['uuid'] for n in ok]


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--api', required=True)
    p.add_argument('--nodes', required=True)
    p.add_argument('--timeout', type=int,
                   help='seconds a phase may take (30 minutes, or 4 s a node '
                        'where that is longer)')
    p.add_argument('--workers', type=int, default=8)
    a = p.parse_args()
    with open(a.nodes) as f:
        fleet = json.load(f)
    s = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_maxsize=a.workers)
    s.mount('http://', adapter)
    out = {'nodes': len(fleet)}
    timeout = a.timeout or max(1800, 4 * len(fleet))
    # Listing every node is work for the one Ironic process, which grows
    # with the fleet: polled each second, a large fleet's listing would
    # take a share of the core the measured work runs on.
    every = max(1.0, len(fleet) / 200)
    with concurrent.futures.ThreadPoolExecutor(a.workers) as pool:
        def enroll(n):
            info = {'redfish_address': n['address'],
                    'redfish_username': n['username'],
                    'redfish_password': n['password'],
                    'redfish_verify_ca': False}
            if n.get('system_id'):
                info['redfish_system_id'] = n['system_id']
            return call(s, 'POST', f'{a.api}/v1/nodes', json={
                'name': n['name'], 'driver': 'redfish', 'driver_info': info,
                'inspect_interface': 'redfish'})['uuid']
        mark('enroll', 'begin')
        start = time.monotonic()
        uuids = list(pool.map(enroll, fleet))
        out['enroll'] = {'secs': round(time.monotonic() - start, 2), 'ok': len(uuids)}
        mark('enroll', 'end')
        for name, target, done, failed in PHASES:
            mark(name, 'begin')
            out[name], uuids = phase(s, a.api, pool, uuids, target, done, failed,
                                     timeout, every)
            mark(name, 'end')
            if not uuids:
                break
    print('FLEET ' + json.dumps(out), flush=True)
    return 0 if out.get('provide', {}).get('ok') == len(fleet) else 1


if __name__ == '__main__':
    sys.exit(main())
