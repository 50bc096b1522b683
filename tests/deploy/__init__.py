"""What an operator deploys (deploy/): scripts, images, compose file, Kubernetes, systemd."""
