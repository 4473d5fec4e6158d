"""Named persistent disks: EBS reconciliation (AWS is the source of truth, seed 000)."""
