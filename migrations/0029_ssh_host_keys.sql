-- The public halves of a reservation's sshd host keys (issue #27 item 6), one OpenSSH
-- public key line each (`ssh-ed25519 AAAA...`). The lifecycle makes the keys once, at
-- provision, and keeps the private halves in the reservation's keys Secret only; the pod
-- installs them at every container start, and the CLI pins them under the alias
-- gpu-dev-<id8>. Empty for a reservation provisioned before this column.
ALTER TABLE reservations ADD COLUMN ssh_host_keys text[] NOT NULL DEFAULT '{}';

GRANT UPDATE (ssh_host_keys) ON reservations TO gpudev_lifecycle;
