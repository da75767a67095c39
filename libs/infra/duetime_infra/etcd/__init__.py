"""Partition ownership in etcd (aetcd): leases, fair shares, fencing tokens."""

from duetime_core.partitions import PartitionToken
from duetime_infra.etcd.gateway import EtcdUnavailable
from duetime_infra.etcd.partitions import OwnershipChange, PartitionLeases

__all__ = ["EtcdUnavailable", "OwnershipChange", "PartitionLeases", "PartitionToken"]
