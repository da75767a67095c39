"""The descriptor set Envoy's gRPC-JSON transcoder reads: the public services with everything
they import (the google.api.http options included), and the google.rpc types of error details.

Built from the generated Python modules the api itself serves, so the gateway transcodes
exactly the contract installed beside it: no compiler at start, no binary file to keep in sync.
"""

from __future__ import annotations

from google.protobuf import descriptor, descriptor_pb2
from google.rpc import error_details_pb2, status_pb2

from duetime.admin.v1 import admin_service_pb2
from duetime.jobs.v1 import job_service_pb2, public_key_service_pb2

JOB_SERVICE = job_service_pb2.DESCRIPTOR.services_by_name["JobService"].full_name
ADMIN_SERVICE = admin_service_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name
PUBLIC_KEY_SERVICE = public_key_service_pb2.DESCRIPTOR.services_by_name[
    "PublicKeyService"
].full_name
SERVICES = (JOB_SERVICE, ADMIN_SERVICE, PUBLIC_KEY_SERVICE)

# google.rpc.Status and its details: a JSON error body shows them decoded
# (`convert_grpc_status`), which needs their types in the set.
_ROOTS = (
    job_service_pb2.DESCRIPTOR,
    admin_service_pb2.DESCRIPTOR,
    public_key_service_pb2.DESCRIPTOR,
    status_pb2.DESCRIPTOR,
    error_details_pb2.DESCRIPTOR,
)


def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    """Every file of the roots and their imports, each after the files it imports."""
    result = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(file: descriptor.FileDescriptor) -> None:
        if file.name in seen:
            return
        seen.add(file.name)
        for dependency in file.dependencies:
            add(dependency)
        result.file.add().MergeFromString(file.serialized_pb)

    for root in _ROOTS:
        add(root)
    return result
