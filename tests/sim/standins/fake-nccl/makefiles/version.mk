##### version (same variables as NCCL's makefiles/version.mk)
NCCL_MAJOR   := 2
NCCL_MINOR   := 28
NCCL_PATCH   := 9
NCCL_SUFFIX  :=
PKG_REVISION := 1
