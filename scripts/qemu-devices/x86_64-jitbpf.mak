# The x86_64 system devices qemu-jitbpf's tests need: the q35 machine
# (with its serial ports, ACPI and fw_cfg for -kernel/-initrd) and
# isa-debug-exit.  QEMU is built --without-default-devices to keep the
# build short; this file goes to configs/devices/x86_64-softmmu/jitbpf.mak.
CONFIG_Q35=y
CONFIG_ISA_DEBUG=y
# q35's ACPI tables always include CXL's (ACPI_X86 selects ACPI_CXL),
# which needs CXL's host code, with the ports and bridges its types
# derive from:
# "default y" options are off here.
CONFIG_CXL=y
CONFIG_PXB=y
CONFIG_CXL_MEM_DEVICE=y
CONFIG_PCIE_PORT=y
