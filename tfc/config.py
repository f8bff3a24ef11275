"""``tfc.config``: what this build runs on."""
from tfc.core.device import PhysicalDevice, list_devices  # noqa: F401
import tfc.frontend.eager_gpu  # noqa: F401,E402  (registers the GPU runtime; imports nothing of CUDA)

list_physical_devices = list_devices  # TensorFlow's name: tf.config.list_physical_devices("GPU")

__all__ = ["PhysicalDevice", "list_devices", "list_physical_devices"]


def __dir__():
    return list(__all__)
