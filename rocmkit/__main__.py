from rocmkit.cli import main

main()
