"""Firmware updates driven by the real sushy, as Ironic's redfish firmware
interface drives them: UpdateService.simple_update with the system as
target, the TaskMonitor it returns polled until the task ends, then the
versions read back from the System, the Manager and the inventory.

With --vendor idrac (an iDRAC 9 endpoint) the BIOS update is Dell's: the
Task answers New first, then vanishes (404) once the package is staged,
its JID waiting Scheduled (JCP001) in the Lifecycle Controller's job
queue, which the start completes (PR19); Ironic looks the job up so. With
--vendor ilo (an iLO endpoint) SimpleUpdate answers 200 with iLO's
extended info, and the update is followed in UpdateService Oem.Hpe.State
as proliantutils and ilorest follow it.

Usage: update.py --url URL --bios-image URL [--bmc-image URL] --username U --password P
                 [--vendor generic|idrac|ilo]
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


def wait_bios(system, version, limit=20):
    """Waits for the System's BiosVersion to read `version`."""
    deadline = time.time() + limit
    while True:
        system.refresh()
        if system.bios_version == version:
            return
        assert time.time() < deadline, system.bios_version
        time.sleep(0.2)


def idrac_bios(root, updates, system, image):
    """An iDRAC's BIOS update: New first, the Task gone once staged, the
    job Scheduled until the start, then Completed."""
    monitor = updates.simple_update(image, targets=[system.path])
    jid = monitor.task_monitor_uri.rstrip("/").rsplit("/", 1)[-1]
    assert jid.startswith("JID_"), monitor.task_monitor_uri
    states = []
    deadline = time.time() + 60
    while True:
        try:
            task = monitor.get_task()
        except sushy.exceptions.ResourceNotFoundError:
            break
        state = value(task.task_state)
        if not states or states[-1] != state:
            states.append(state)
        if state not in ("new", "starting", "running", "pending"):
            raise SystemExit(f"the task ended {state} instead of leaving for its job")
        assert time.time() < deadline, states
        time.sleep(0.2)
    assert states[0] == "new", states
    print(f"ok: Dell task {jid} went {' -> '.join(states)}, then 404 once staged")
    jobs = "/redfish/v1/Managers/iDRAC.Embedded.1/Oem/Dell/Jobs/"
    job = root._conn.get(jobs + jid).json()
    assert job["JobState"] == "Scheduled" and job["MessageId"].endswith("JCP001"), job
    print(f"ok: job {jid} Scheduled ({job['MessageId']})")
    system.refresh()
    assert system.bios_version != "2.19.1", system.bios_version
    system.reset_system(sushy.ResetType.ON)
    wait_bios(system, "2.19.1")
    deadline = time.time() + 20
    while True:
        job = root._conn.get(jobs + jid).json()
        if job["JobState"] == "Completed":
            break
        assert time.time() < deadline, job
        time.sleep(0.2)
    assert job["MessageId"].endswith("PR19"), job
    print(f"ok: the start installed 2.19.1 and completed {jid} ({job['MessageId']})")


def ilo_bios(root, updates, system, image):
    """An iLO's BIOS update: 200 with iLO's extended info, followed in
    UpdateService Oem.Hpe.State until Complete."""
    conn = root._conn
    target = conn.get(updates.path).json()["Actions"]["#UpdateService.SimpleUpdate"]["target"]
    r = conn.post(target, data={"ImageURI": image, "Targets": [system.path]})
    assert r.status_code == 200, r.status_code
    ids = [m["MessageId"] for m in r.json()["error"]["@Message.ExtendedInfo"]]
    assert ids == ["Base.1.4.Success"], ids
    print(f"ok: SimpleUpdate answered 200 {ids}, task at {r.headers.get('Location')}")
    seen = []
    deadline = time.time() + 30
    while True:
        hpe = conn.get(updates.path).json()["Oem"]["Hpe"]
        if not seen or seen[-1] != hpe["State"]:
            seen.append(hpe["State"])
        if hpe["State"] in ("Complete", "Error"):
            break
        assert time.time() < deadline, seen
        time.sleep(0.2)
    assert seen[-1] == "Complete" and hpe["FlashProgressPercent"] == 100, hpe
    assert "Updating" in seen, seen
    print(f"ok: Oem.Hpe.State went {' -> '.join(seen)}")
    system.reset_system(sushy.ResetType.ON)
    wait_bios(system, "2.19.1")
    print("ok: the new BIOS version shows after the start")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--bios-image", required=True)
    ap.add_argument("--bmc-image")
    ap.add_argument("--vendor", choices=("generic", "idrac", "ilo"), default="generic")
    ap.add_argument("--username", required=True)
    ap.add_argument("--password", required=True)
    args = ap.parse_args()
    root = sushy.Sushy(args.url, username=args.username, password=args.password)
    system_path = root.get_system_collection().members_identities[0]
    system = root.get_system(system_path)
    updates = root.get_update_service()
    if args.vendor == "idrac":
        idrac_bios(root, updates, system, args.bios_image)
        print("update: passed")
        return
    if args.vendor == "ilo":
        ilo_bios(root, updates, system, args.bios_image)
        print("update: passed")
        return

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
