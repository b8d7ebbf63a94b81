"""What tests share: CLI and HTTP helpers, fake servers, data builders, fixtures. Not tests themselves."""
