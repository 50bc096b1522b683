"""A CUDA sandbox gets only its own GPU's device node (graders/devices/gpu_nodes.py)."""

from __future__ import annotations

from pathlib import Path

from graders.devices import gpu_nodes


def _driver(tmp_path: Path) -> Path:
    """Three GPUs as the driver lists them; minors deliberately not in bus order."""
    root = tmp_path / "gpus"
    for bus, uuid, minor in (
        ("0000:17:00.0", "GPU-aaaa-1111", 2),
        ("0000:65:00.0", "GPU-bbbb-2222", 0),
        ("0000:ca:00.0", "GPU-cccc-3333", 1),
    ):
        folder = root / bus
        folder.mkdir(parents=True)
        (folder / "information").write_text(
            f"Model:\t\t NVIDIA H100\nIRQ:\t\t 42\nGPU UUID:\t {uuid}\nDevice Minor:\t {minor}\n"
        )
    return root


def test_indices_in_bus_order_map_to_their_minors(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    assert gpu_nodes.own_minors("0", "PCI_BUS_ID", driver) == [2]
    assert gpu_nodes.own_minors("1", "PCI_BUS_ID", driver) == [0]
    assert gpu_nodes.own_minors("2,0", "PCI_BUS_ID", driver) == [1, 2]


def test_uuids_map_whatever_the_order(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    assert gpu_nodes.own_minors("GPU-cccc-3333", None, driver) == [1]


def test_what_cannot_be_mapped_is_none(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    assert gpu_nodes.own_minors("1", None, driver) is None  # fastest-first: unknown order
    assert gpu_nodes.own_minors("7", "PCI_BUS_ID", driver) is None
    assert gpu_nodes.own_minors("GPU-dddd", None, driver) is None
    assert gpu_nodes.own_minors(None, "PCI_BUS_ID", driver) is None
    assert gpu_nodes.own_minors("0", "PCI_BUS_ID", tmp_path / "absent") is None


def test_only_the_own_node_and_the_shared_ones_are_bound(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia-caps", "null"):
        (dev / name).touch()
    assert gpu_nodes.device_nodes("1", "PCI_BUS_ID", dev, driver) == [
        "nvidia-uvm",
        "nvidia0",
        "nvidiactl",
    ]
    # Unmappable: every GPU node, as before, so the grading still runs.
    assert gpu_nodes.device_nodes("1", None, dev, driver) == [
        "nvidia-uvm",
        "nvidia0",
        "nvidia1",
        "nvidia2",
        "nvidiactl",
    ]


def test_nodes_the_sandbox_uid_cannot_open_are_named(tmp_path: Path) -> None:
    """The sandbox's uid has no groups: a node of 0660 (the video group's) is closed to it."""
    dev = tmp_path / "dev"
    dev.mkdir()
    for name, mode in (("nvidiactl", 0o666), ("nvidia0", 0o660), ("nvidia-uvm", 0o666)):
        (dev / name).touch()
        (dev / name).chmod(mode)
    assert gpu_nodes.unreachable(["nvidiactl", "nvidia-uvm"], dev) is None
    said = gpu_nodes.unreachable(["nvidiactl", "nvidia0", "nvidia-uvm"], dev)
    assert said is not None
    assert "/dev/nvidia0 is mode 0660" in said and "nvidiactl" not in said
    assert "NVreg_DeviceFileMode=0666" in said and "chmod 0666" in said
    assert gpu_nodes.unreachable(["nvidia7"], dev) is None  # gone since the listing
