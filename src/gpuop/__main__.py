from gpuop.cli import main

main()
