# The aarch64 system devices qemu-jitbpf's tests need: the virt machine.
# Goes to configs/devices/aarch64-softmmu/jitbpf.mak (see x86_64's).
CONFIG_ARM_VIRT=y
# virt's ACPI tables include CXL's (it selects ACPI_CXL), which needs
# CXL's host code, with the ports and bridges its types derive from:
# "default y" options are off here.
CONFIG_CXL=y
CONFIG_PXB=y
CONFIG_CXL_MEM_DEVICE=y
CONFIG_PCIE_PORT=y
