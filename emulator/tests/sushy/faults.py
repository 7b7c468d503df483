#!/usr/bin/env python3
"""What real sushy does when the BMC misbehaves (Shoal's fault injection).

    faults.py --url URL --admin URL --token TOKEN --username U --password P

URL is an iDRAC-profiled BMC endpoint of one system; the admin endpoint
sets the faults of each check. Prints 'ok - NAME' or 'not ok - NAME: WHY'
per check and one 'N passed, M failed' line; exits 1 when a check failed.
"""

import argparse
import sys
import time
import traceback
from urllib.parse import urlparse

import requests
import sushy
from sushy import exceptions as sushy_exc


class CheckFailed(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise CheckFailed(why)


class Run:
    def __init__(self, a):
        self.a = a
        self.log = []
        self.admin = requests.Session()
        self.admin.trust_env = False
        self.admin.headers['Authorization'] = 'Bearer ' + a.token

    def client(self):
        auth = sushy.auth.SessionAuth(self.a.username, self.a.password)
        root = sushy.Sushy(self.a.url, auth=auth, server_side_retries=5,
                           server_side_retries_delay=1)
        root._conn._session.hooks['response'].append(self._record)
        return root

    def _record(self, rsp, *args, **kwargs):
        self.log.append((rsp.request.method, urlparse(rsp.request.url).path,
                         rsp.status_code))

    def faults(self, rules, seed=1):
        r = self.admin.put(self.a.admin + '/shoal/v1/faults',
                           json={'seed': seed, 'rules': rules}, timeout=10)
        expect(r.status_code == 200, f'admin PUT: {r.status_code} {r.text}')
        self.log = []

    def admin_post(self, what, body):
        r = self.admin.post(self.a.admin + '/shoal/v1/faults/' + what, json=body, timeout=10)
        expect(r.status_code == 200, f'admin {what}: {r.status_code} {r.text}')

    def statuses(self, method):
        return [s for (m, _, s) in self.log if m == method]


def system(root):
    return root.get_system(root.get_system_collection().members_identities[0])


def check_sys518_is_retried(r):
    root = r.client()
    s = system(root)
    # Half of the PATCHes fail as a busy iDRAC does; with seed 6 the
    # first fails and the second passes.
    r.faults([{'methods': ['PATCH'], 'error_rate': 0.5}], seed=6)
    s.set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_PXE,
                              enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    got = r.statuses('PATCH')
    expect(got == [503, 200], f'PATCH statuses {got}')


def check_a_plain_500_is_not_retried(r):
    root = r.client()
    s = system(root)
    r.faults([{'methods': ['PATCH'], 'error_rate': 1.0, 'status': 500}])
    try:
        s.set_system_boot_options(target=sushy.BOOT_SOURCE_TARGET_HDD,
                                  enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)
    except sushy_exc.ServerSideError:
        pass
    else:
        raise CheckFailed('the PATCH succeeded through a 500')
    expect(r.statuses('PATCH') == [500], f'PATCH statuses {r.statuses("PATCH")}')


def check_expired_session_is_renewed(r):
    root = r.client()
    system(root)
    r.faults([])
    r.admin_post('expire-sessions', {})
    s = system(root)
    expect(s.power_state is not None, 'no power state')
    logins = [s for (m, p, s) in r.log if m == 'POST' and p.endswith('/Sessions')]
    gets = r.statuses('GET')
    expect(401 in gets and logins and logins[-1] == 201, f'GETs {gets}, logins {logins}')


def check_bmc_reboot_is_waited_out(r):
    root = r.client()
    system(root)
    r.faults([])
    r.admin_post('reboot', {'seconds': 3})
    t = time.monotonic()
    s = system(root)
    expect(s.power_state is not None, 'no power state')
    gets = r.statuses('GET')
    expect(503 in gets and gets[-1] == 200, f'GET statuses {gets}')
    expect(time.monotonic() - t >= 2, 'answered before the reboot ended')


def check_dropped_connections_are_retried(r):
    root = r.client()
    s = system(root)
    # GETs of the System drop half the time (seed 5: three drops, two
    # answers, two drops, ...); sushy retries the connection each time.
    r.faults([{'methods': ['GET'], 'path': s.path, 'drop_rate': 0.5}], seed=5)
    for _ in range(3):
        s.refresh()
    expect(r.statuses('GET') == [200, 200, 200], f'{r.log}')


CHECKS = [
    ('SYS518 on PATCH is retried until it passes', check_sys518_is_retried),
    ('a 500 without SYS518 is not retried', check_a_plain_500_is_not_retried),
    ('an expired session is renewed', check_expired_session_is_renewed),
    ('a BMC reboot (503) is waited out on GET', check_bmc_reboot_is_waited_out),
    ('dropped connections are retried', check_dropped_connections_are_retried),
]


def main():
    p = argparse.ArgumentParser()
    for k in ('url', 'admin', 'token', 'username', 'password'):
        p.add_argument('--' + k, required=True)
    a = p.parse_args()
    r = Run(a)
    passed = failed = 0
    for name, check in CHECKS:
        try:
            check(r)
        except Exception as e:  # noqa: BLE001 - reported, then counted
            detail = e if isinstance(e, CheckFailed) else traceback.format_exc()
            print(f'not ok - {name}: {detail}')
            failed += 1
        else:
            print(f'ok - {name}')
            passed += 1
        finally:
            r.admin.delete(a.admin + '/shoal/v1/faults', timeout=10)
    print(f'{passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
