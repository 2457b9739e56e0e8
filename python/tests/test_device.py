"""Device, tensors and numpy: configs, overrides, uploads and downloads, and
C++ errors arriving as Python exceptions with the C++ messages."""
import numpy as np
import pytest

import tessera


def test_a_device_opens_on_a_config_name_with_overrides():
    dev = tessera.Device("small", overrides={"hbm.bandwidth_gbps": 128}, fidelity="tlm")
    assert dev.config.name == "small"
    assert dev.config.sbuf.partitions == 32
    assert dev.config["hbm"]["bandwidth_gbps"] == 128
    assert dev.config.derived.peak_tflops["bf16"] > 0
    assert dev.fidelity == "tlm"
    assert not dev.no_data


def test_a_device_opens_on_a_file(source_dir):
    dev = tessera.Device(f"{source_dir}/configs/neuroncore-v2.yaml", no_data=True)
    assert dev.config.tensor.rows == 128
    assert dev.no_data


def test_config_errors_carry_the_cpp_message():
    with pytest.raises(tessera.ConfigError, match="unknown config 'tinny'.*did you mean 'tiny'"):
        tessera.Device("tinny")
    with pytest.raises(tessera.ConfigError, match="hbm.bandwith_gbps"):
        tessera.Device("tiny", overrides=["hbm.bandwith_gbps=3"])
    with pytest.raises(tessera.KernelError, match="fidelity fast: expected rtl, sampled or tlm"):
        tessera.Device("tiny", fidelity="fast")


def test_fp32_round_trips_and_keeps_its_shape():
    dev = tessera.Device("tiny")
    t = dev.allocate("x", [3, 5], tessera.fp32)
    assert t.shape == (3, 5) and t.elements == 15 and t.bytes == 60
    values = np.arange(15, dtype=np.float64).reshape(3, 5) / 7  # any float array is cast to float32
    dev.upload(t, values)
    got = dev.download(t)
    assert got.dtype == np.float32 and got.shape == (3, 5)
    np.testing.assert_array_equal(got, values.astype(np.float32))


def test_bf16_takes_floats_rounded_or_exact_bits():
    dev = tessera.Device("tiny")
    t = dev.allocate("w", [4], tessera.bf16)
    x = np.array([1.0, 1.00390625, 1.01171875, -3.140625], dtype=np.float32)
    dev.upload(t, x)  # rounded to nearest even, as the C++ upload does
    np.testing.assert_array_equal(dev.download(t), tessera.from_bf16(tessera.to_bf16(x)))
    bits = np.array([0x3F80, 0x3F81, 0xC049, 0x7F80], dtype=np.uint16)  # 1, 1+2^-7, -3.140625, inf
    dev.upload(t, bits)
    np.testing.assert_array_equal(tessera.to_bf16(dev.download(t)), bits)
    assert tessera.from_bf16(bits)[3] == np.inf


def test_an_upload_of_the_wrong_size_is_the_cpp_error():
    dev = tessera.Device("tiny")
    t = dev.allocate("x", [2, 2], tessera.fp32)
    with pytest.raises(tessera.KernelError, match=r"^upload\('x'\): 3 values for 4 elements$"):
        dev.upload(t, np.zeros(3, dtype=np.float32))


def test_one_simulation_per_process_and_isolated_runs_many():
    def relu_run(config):
        dev = tessera.Device(config, fidelity="tlm")
        x = dev.allocate("x", [8, 16], tessera.fp32)
        dev.upload(x, np.full((8, 16), -0.25, dtype=np.float32))
        kb = tessera.KernelBuilder(dev, "relu")
        t = kb.sbuf("t", 8, 16, tessera.fp32)
        kb.dma(t, x.all())
        kb.activation(t, t, tessera.Act.relu, scale=2.0, bias=1.0)
        kb.dma(x.all(), t)
        report = dev.run(kb.build())
        with pytest.raises(tessera.KernelError, match="SystemC runs one simulation per process"):
            dev.run(tessera.KernelBuilder(dev, "again").build())
        return report.to_dict(), dev.download(x)

    for config in ("tiny", "small"):
        report, y = tessera.isolated(relu_run, config)
        assert report["ok"], report["error"]
        assert report["config"] == config
        np.testing.assert_array_equal(y, np.full((8, 16), 0.5, dtype=np.float32))


def test_an_exception_in_the_child_is_raised_here():
    def fails():
        tessera.Device("no-such-config")

    with pytest.raises(tessera.ConfigError, match="no-such-config"):
        tessera.isolated(fails)


def test_a_kernel_launched_over_the_cores_of_a_chip():
    def relu_rows(cores):
        dev = tessera.Device("tiny", fidelity="tlm", cores=cores)
        x = dev.allocate("x", [8, 16], tessera.fp32)
        dev.upload(x, np.full((8, 16), -0.25, dtype=np.float32))

        def build(instance, grid):  # NKI's program_id(0) and num_programs(0)
            rows = 8 // grid
            kb = tessera.KernelBuilder(dev, "relu")
            t = kb.sbuf("t", rows, 16, tessera.fp32)
            kb.dma(t, x.region(instance * rows, 0, rows, 16))
            kb.activation(t, t, tessera.Act.relu, scale=2.0, bias=1.0)
            kb.dma(x.region(instance * rows, 0, rows, 16), t)
            return kb.build()

        if cores > 1:
            with pytest.raises(tessera.KernelError, match="a grid of 3 instances on a device of 2 cores"):
                dev.launch(build, grid=3)
        return dev.cores, dev.launch(build, grid=cores).to_dict(), dev.download(x)

    cores, report, y = tessera.isolated(relu_rows, 2)
    assert cores == 2
    assert report["ok"], report["error"]
    assert report["cores"] == 2 and len(report["per_core"]) == 2
    assert all(c["hbm_bytes"] > 0 for c in report["per_core"])
    np.testing.assert_array_equal(y, np.full((8, 16), 0.5, dtype=np.float32))
    with pytest.raises(tessera.KernelError, match="3 cores: a tiny chip has 2"):
        tessera.Device("tiny", cores=3)
