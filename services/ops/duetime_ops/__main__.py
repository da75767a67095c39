from duetime_ops.main import main

main()
