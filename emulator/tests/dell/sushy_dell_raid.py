"""Drives an idrac9 endpoint's RAID through sushy's Dell extension, call
for call as Ironic's idrac-redfish RAID interface (DracRedfishRAID) makes
them, and checks what the BMC then says.

Run by tests/it/dell_raid.rs in the venv ci/test builds; prints one line
per check and "N passed, M failed".
"""

import argparse
import sys
import time

import sushy
from sushy.oem import dell as sushy_dell

RESULTS = []


def check(name, fn):
    try:
        fn()
    except Exception as e:  # a failed check is reported, the rest go on
        RESULTS.append((name, False, f"{type(e).__name__}: {e}"))
        print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
    else:
        RESULTS.append((name, True, ""))
        print(f"ok   {name}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    args = ap.parse_args()
    conn = sushy.Sushy(args.url, username="admin", password="password")
    manager = conn.get_manager("/redfish/v1/Managers/iDRAC.Embedded.1")

    # Ironic reads the System afresh at each step (sushy caches what
    # hangs below one System object).
    def system():
        return conn.get_system("/redfish/v1/Systems/System.Embedded.1")

    def oem_sys():
        return system().get_oem_extension("Dell")

    def storage_and_controller():
        storage = system().storage.get_members()[0]
        return storage, storage.controllers.get_members()[0]

    def drives_status():
        storage = system().storage.get_members()[0]
        return {d.identity: d.json["Oem"]["Dell"]["DellPhysicalDisk"]["RaidStatus"]
                for d in storage.drives}

    def realtime_ready():
        lc = manager.get_oem_extension("Dell").lifecycle_service
        assert lc.is_realtime_ready() is True

    check("the LC is ready for real-time jobs", realtime_ready)

    def to_raid():
        # Ironic's pre_create_configuration: convert the chosen drives.
        storage, controller = storage_and_controller()
        assert controller.raid_types, "the controller offers RAID"
        chosen = storage.drives[:2]
        monitors = oem_sys().change_physical_disk_state(
            sushy_dell.PHYSICAL_DISK_STATE_MODE_RAID, {controller: chosen})
        assert len(monitors) == 1, monitors
        for tm in monitors:
            if tm.check_is_processing:
                tm.wait(30)
            task = tm.get_task()
            assert task.task_state == sushy.TASK_STATE_COMPLETED, task.task_state
            oem_task = task.get_oem_extension("Dell")
            assert oem_task.job_type == sushy_dell.JOB_TYPE_RT_NO_REBOOT_CONF
        status = drives_status()
        ready = [d.identity for d in chosen]
        assert all(status[i] == "Ready" for i in ready), status
        # Already converted (as a fresh look shows): nothing left to do.
        storage, controller = storage_and_controller()
        chosen = [d for d in storage.drives if d.identity in ready]
        again = oem_sys().change_physical_disk_state(
            sushy_dell.PHYSICAL_DISK_STATE_MODE_RAID, {controller: chosen})
        assert again == [], again

    check("ConvertToRAID through change_physical_disk_state", to_raid)

    def volume():
        storage = system().storage.get_members()[0]
        drives = [d for d in storage.drives
                  if d.json["Oem"]["Dell"]["DellPhysicalDisk"]["RaidStatus"] == "Ready"]
        payload = {
            "RAIDType": "RAID1",
            "Links": {"Drives": [{"@odata.id": d.path} for d in drives]},
        }
        storage.volumes.create(payload, apply_time=sushy.APPLY_TIME_IMMEDIATE)
        storage = system().storage.get_members()[0]
        raid = [v for v in storage.volumes.get_members() if v.raid_type]
        assert len(raid) == 1 and raid[0].identity.startswith("Disk.Virtual."), raid
        status = drives_status()
        assert sorted(status.values()) == ["NonRAID", "Online", "Online"], status
        # Ironic's delete_configuration deletes volumes with a RAID type,
        # leaving the raw (non-RAID) ones.
        for v in storage.volumes.get_members():
            if v.raid_type:
                v.delete(apply_time=sushy.APPLY_TIME_IMMEDIATE)
        status = drives_status()
        assert sorted(status.values()) == ["NonRAID", "Ready", "Ready"], status

    check("a RAID1 over the converted drives, then deleted", volume)

    def clear_foreign():
        # Ironic's post_delete_configuration: STOR018 means nothing to do.
        assert oem_sys().clear_foreign_config() == []

    check("ClearForeignConfig answers STOR018 (no foreign drives)", clear_foreign)

    def controller_mode():
        storage, controller = storage_and_controller()
        oem_ctl = controller.get_oem_extension("Dell")
        # In RAID mode already: nothing to convert.
        assert oem_ctl.convert_to_raid() is None
        # An operator's HBA switch, then Ironic's conversion back.
        tm = controller.update(
            {"Oem": {"Dell": {"DellStorageController": {"ControllerMode": "HBA"}}}},
            apply_time=sushy.APPLY_TIME_ON_RESET)
        assert tm is not None and tm.is_processing
        system().reset_system(sushy.RESET_ON)
        deadline = time.time() + 30
        while tm.check_is_processing:
            assert time.time() < deadline, "the mode job never completed"
            time.sleep(0.5)
        assert tm.get_task().task_state == sushy.TASK_STATE_COMPLETED
        storage, controller = storage_and_controller()
        oem_ctl = controller.get_oem_extension("Dell")
        mode = oem_ctl.dell_storage_controller.controller_mode
        assert mode.value == "HBA", mode
        status = drives_status()
        assert set(status.values()) == {"NonRAID"}, status
        tm = oem_ctl.convert_to_raid()
        assert tm is not None, "an HBA controller converts back"
        system().reset_system(sushy.RESET_FORCE_RESTART)
        deadline = time.time() + 30
        while tm.check_is_processing:
            assert time.time() < deadline
            time.sleep(0.5)
        storage, controller = storage_and_controller()
        mode = controller.get_oem_extension("Dell").dell_storage_controller.controller_mode
        assert mode.value == "RAID", mode

    check("ControllerMode HBA and back, at resets, by sushy's extension", controller_mode)

    def to_non_raid():
        # Every drive non-RAID again (controller_to_disks found by sushy).
        storage, controller = storage_and_controller()
        ready = [d for d in storage.drives
                 if d.json["Oem"]["Dell"]["DellPhysicalDisk"]["RaidStatus"] == "Ready"]
        if not ready:
            oem_sys().change_physical_disk_state(
                sushy_dell.PHYSICAL_DISK_STATE_MODE_RAID,
                {controller: storage.drives[:1]})[0].wait(30)
        monitors = oem_sys().change_physical_disk_state(
            sushy_dell.PHYSICAL_DISK_STATE_MODE_NONRAID)
        assert len(monitors) == 1, monitors
        monitors[0].wait(30)
        assert set(drives_status().values()) == {"NonRAID"}, drives_status()

    check("ConvertToNonRAID of every Ready drive", to_non_raid)

    passed = sum(1 for r in RESULTS if r[1])
    failed = len(RESULTS) - passed
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
