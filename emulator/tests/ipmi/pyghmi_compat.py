"""Drives a Shoal BMC with stock pyghmi (the library behind Ironic's
ipminative and the petitboot specification's power and console control),
and checks each answer against what Redfish says of the same machine.

Usage: pyghmi_compat.py --host H --port P --user U --password PW --redfish URL
                         --console-user U2 --console-password PW2
Prints one line per check and "N passed, M failed"; exits 1 on a failure.
"""
import argparse
import json
import sys
import urllib.request

import time

from pyghmi.ipmi import command
from pyghmi.ipmi import console
from pyghmi.ipmi.private import session as ipmisession
from pyghmi import exceptions

passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {what}")
    else:
        failed += 1
        print(f"FAIL {what}: {detail}")


def redfish(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host")
    ap.add_argument("--port", type=int)
    ap.add_argument("--user")
    ap.add_argument("--password")
    ap.add_argument("--redfish")
    # pyghmi shares one session per (BMC, user, password): a console of
    # its own session needs another user.
    ap.add_argument("--console-user")
    ap.add_argument("--console-password")
    a = ap.parse_args()
    members = redfish(a.redfish + "/redfish/v1/Systems")["Members"]
    system_url = a.redfish + members[0]["@odata.id"]

    c = command.Command(bmc=a.host, userid=a.user, password=a.password, port=a.port)
    check("get_power off at start", c.get_power() == {"powerstate": "off"}, c.get_power())
    r = c.set_power("on", wait=True)
    check("set_power on with wait", r == {"powerstate": "on"}, r)
    check("Redfish sees it on", redfish(system_url)["PowerState"] == "On")

    c.set_bootdev("network", persist=False, uefiboot=True)
    got = c.get_bootdev()
    check("get_bootdev after set_bootdev(network, uefiboot)",
          got == {"bootdev": "network", "persistent": False, "uefimode": True}, got)
    boot = redfish(system_url)["Boot"]
    check("Redfish reads Pxe / UEFI / Once",
          (boot["BootSourceOverrideTarget"], boot["BootSourceOverrideMode"],
           boot["BootSourceOverrideEnabled"]) == ("Pxe", "UEFI", "Once"), boot)

    c.set_bootdev("hd", persist=True, uefiboot=False)
    got = c.get_bootdev()
    check("persistent legacy disk round-trips",
          got == {"bootdev": "hd", "persistent": True, "uefimode": False}, got)
    boot = redfish(system_url)["Boot"]
    check("Redfish reads Hdd / Legacy / Continuous",
          (boot["BootSourceOverrideTarget"], boot["BootSourceOverrideMode"],
           boot["BootSourceOverrideEnabled"]) == ("Hdd", "Legacy", "Continuous"), boot)
    c.set_bootdev("default")
    got = c.get_bootdev()
    check("default clears the override", got.get("bootdev") == "default", got)

    inv = dict(c.get_inventory_of_component("System") or {})
    uuid = redfish(system_url)["UUID"]
    check("system UUID (Get System GUID) is the Redfish UUID",
          str(inv.get("UUID", "")).lower() == uuid.lower(), (inv.get("UUID"), uuid))

    r = c.set_power("off", wait=True)
    check("set_power off with wait", r == {"powerstate": "off"}, r)

    # Serial-over-LAN: console.Console, as Ironic's ipminative console.
    seen = []
    problems = []

    def io(data):
        if isinstance(data, dict):
            problems.append(data)
        else:
            seen.append(data if isinstance(data, str) else data.decode("utf-8", "replace"))

    def wait(cond, secs=15):
        end = time.monotonic() + secs
        while not cond() and time.monotonic() < end:
            ipmisession.Session.wait_for_rsp(timeout=0.1)
        return cond()

    con = console.Console(bmc=a.host, userid=a.console_user, password=a.console_password,
                          iohandler=io, port=a.port, force=True)
    check("SOL activates", wait(lambda: con.activated), problems)
    req = urllib.request.Request(system_url + "/Actions/ComputerSystem.Reset",
                                 data=b'{"ResetType": "On"}', method="POST",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).close()
    check("the console shows the power-on and the boot",
          wait(lambda: "booting" in "".join(seen)), "".join(seen))
    con.send_data("typed-by-pyghmi")
    check("what is typed comes back", wait(lambda: "typed-by-pyghmi" in "".join(seen)),
          "".join(seen))
    check("no console errors", not problems, problems)
    con.close()
    c.ipmi_session.logout()

    try:
        bad = command.Command(bmc=a.host, userid=a.user, password="wrong-" + a.password,
                              port=a.port)
        bad.get_power()
        check("a wrong password is refused", False, "logged in")
    except exceptions.IpmiException as e:
        check("a wrong password is refused", "password" in str(e).lower(), e)

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
