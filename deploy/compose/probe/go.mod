module shapes.example.com/apiserver-probe

go 1.26
