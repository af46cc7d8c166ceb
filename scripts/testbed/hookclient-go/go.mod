module vpnaas.invalid/hookclient

go 1.21
