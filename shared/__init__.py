"""Aurora's shared library: the contracts and helpers every service uses."""
