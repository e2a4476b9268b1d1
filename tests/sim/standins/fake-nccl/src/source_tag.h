/* Changed by each tagged revision of the fixture repository. */
#define FAKE_NCCL_SOURCE_TAG "fake-nccl-source v2.28.9-1"
