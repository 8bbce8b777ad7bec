from retrieval_gate.cli import main

if __name__ == "__main__":
    main()
