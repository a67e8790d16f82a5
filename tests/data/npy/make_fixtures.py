# Regenerates the .npy fixtures read by ir/npy_test.cpp:
#   cd tests/data/npy && /usr/bin/python3 make_fixtures.py
# Values are small and exact so the test can check every element.
import numpy as np
from numpy.lib import format as fmt

def save(name, a, version=None):
    with open(name, "wb") as f:
        fmt.write_array(f, a, version=version, allow_pickle=False)

save("f32_2x3.npy", np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1)
save("f64_4.npy", np.array([1.5, -2.25, 1e300, -0.0], dtype="<f8"))
save("f16_3.npy", np.array([1.0, -0.5, 65504.0], dtype="<f2"))
save("i64_2x2.npy", np.array([[1, -2], [2**40, -(2**40)]], dtype="<i8"))
save("i32_3.npy", np.array([7, -8, 2**31 - 1], dtype="<i4"))
save("i16_2.npy", np.array([-32768, 32767], dtype="<i2"))
save("i8_3.npy", np.array([-128, 0, 127], dtype="i1"))
save("u8_3.npy", np.array([0, 128, 255], dtype="u1"))
save("bool_4.npy", np.array([True, False, False, True]))
save("scalar_f32.npy", np.array(3.25, dtype="<f4"))
save("empty_0x3.npy", np.zeros((0, 3), dtype="<f4"))
save("v2_i32_2x2.npy", np.array([[1, 2], [3, 4]], dtype="<i4"), version=(2, 0))
save("v3_f32_3.npy", np.array([1, 2, 3], dtype="<f4"), version=(3, 0))
save("fortran_f32_2x3.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
save("bigendian_f4_2.npy", np.array([1, 2], dtype=">f4"))
save("c8_1.npy", np.array([1 + 2j], dtype="<c8"))
