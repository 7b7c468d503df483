"""Firmware updates driven by the real sushy, as Ironic's redfish firmware
interface drives them: UpdateService.simple_update with the system as
target, the TaskMonitor it returns polled until the task ends, then the
versions read back from the System, the Manager and the inventory.

Usage: update.py --url URL --bios-image URL --bmc-image URL --username U --password P
Prints one line per check and exits non-zero on the first failure.
"""

import argparse
import sys
import time

import sushy


def value(enum):
    """A sushy enumeration's DMTF value, lower-cased."""
    return str(getattr(enum, "value", enum)).lower()


def finish(monitor, limit=60):
    """Polls the monitor the way Ironic does (a fresh GET each time) until
    the task is no longer New, Starting, Running or Pending; the task."""
    deadline = time.time() + limit
    states = []
    while True:
        task = monitor.get_task()
        state = value(task.task_state)
        if not states or states[-1] != state:
            states.append(state)
        if state not in ("new", "starting", "running", "pending"):
            return task, states
        if time.time() > deadline:
            raise SystemExit(f"task still {state} after {limit} s")
        time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--bios-image", required=True)
    ap.add_argument("--bmc-image", required=True)
    ap.add_argument("--username", required=True)
    ap.add_argument("--password", required=True)
    args = ap.parse_args()
    root = sushy.Sushy(args.url, username=args.username, password=args.password)
    system_path = root.get_system_collection().members_identities[0]
    system = root.get_system(system_path)
    updates = root.get_update_service()

    monitor = updates.simple_update(args.bios_image, targets=[system_path])
    print(f"ok: simple_update answered with a monitor at {monitor.task_monitor_uri}")
    task, states = finish(monitor)
    assert states[0] == "new", states
    assert states[-1] == "completed", states
    assert value(task.task_status) == "ok", task.task_status
    ids = [m.message_id for m in task.messages]
    assert ids[-1].startswith("Update.") and ids[-1].endswith("AwaitToActivate"), ids
    print(f"ok: BIOS task went {' -> '.join(states)}, ended with {ids[-1]}")
    system.refresh()
    assert system.bios_version == "1.0.0", system.bios_version
    system.reset_system(sushy.ResetType.ON)
    deadline = time.time() + 20
    while True:
        system.refresh()
        if system.bios_version == "2.19.1":
            break
        assert time.time() < deadline, system.bios_version
        time.sleep(0.2)
    print("ok: the new BIOS version shows after the start")

    manager = system.managers[0]
    monitor = updates.simple_update(args.bmc_image, targets=[manager.path])
    task, states = finish(monitor)
    assert states[-1] == "completed", states
    deadline = time.time() + 30
    while True:
        try:
            manager.refresh()
            if manager.firmware_version == "9.9.9":
                break
        except sushy.exceptions.ServerSideError:
            pass  # the BMC is restarting
        assert time.time() < deadline, manager.firmware_version
        time.sleep(0.3)
    print("ok: the BMC restarted into 9.9.9")

    inventory = {m.identity: m for m in updates.firmware_inventory.get_members()}
    versions = {k: v.version for k, v in inventory.items()}
    assert any(v == "2.19.1" for v in versions.values()), versions
    assert any(v == "9.9.9" for v in versions.values()), versions
    assert all(m.updateable for m in inventory.values()), versions
    print(f"ok: the firmware inventory reads {versions}")
    print("update: passed")


if __name__ == "__main__":
    sys.exit(main())
