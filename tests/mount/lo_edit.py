"""Drive a running `soffice --headless` through its UNO pipe, one step per line of stdin.

Run with Debian's /usr/bin/python3 (python3-uno is its module, not pip's):

    /usr/bin/python3 lo_edit.py PIPE_NAME

Each line read is a command; each answer is one line, `ok ...` or `error ...`:
    create PATH TEXT   a new Writer document holding TEXT, stored as PATH (.odt)
    open PATH          open the document for editing (LibreOffice takes its lock file)
    append TEXT        add TEXT at the end of the open document's text
    store              save the open document where it came from (Ctrl+S)
    text               the open document's text
    close              close the open document (LibreOffice drops its lock file)
    quit               end this script (soffice keeps running)
"""

import sys
import time

import uno
from com.sun.star.beans import PropertyValue


def connect(pipe: str, timeout: float = 120.0):
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    deadline = time.monotonic() + timeout
    while True:
        try:
            context = resolver.resolve(f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext")
            break
        except Exception:  # noqa: BLE001 - NoConnectException until soffice listens
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    return context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)


def properties(**values):
    result = []
    for name, value in values.items():
        prop = PropertyValue()
        prop.Name, prop.Value = name, value
        result.append(prop)
    return tuple(result)


def main() -> int:
    desktop = connect(sys.argv[1])
    document = None
    for line in sys.stdin:
        command, _, argument = line.rstrip("\n").partition(" ")
        try:
            if command == "create":
                path, _, text = argument.partition(" ")
                new = desktop.loadComponentFromURL("private:factory/swriter", "_blank", 0, properties(Hidden=True))
                new.getText().setString(text)
                new.storeToURL(uno.systemPathToFileUrl(path), properties(FilterName="writer8"))
                new.close(True)
                answer = "ok"
            elif command == "open":
                document = desktop.loadComponentFromURL(uno.systemPathToFileUrl(argument), "_blank", 0,
                                                        properties(Hidden=True))
                answer = "ok"
            elif command == "append":
                text = document.getText()
                text.insertString(text.getEnd(), argument, False)
                answer = "ok"
            elif command == "store":
                document.store()
                answer = "ok"
            elif command == "text":
                answer = "ok " + document.getText().getString()
            elif command == "close":
                document.close(True)
                document = None
                answer = "ok"
            elif command == "quit":
                print("ok", flush=True)
                return 0
            else:
                answer = f"error unknown command {command}"
        except Exception as error:  # noqa: BLE001 - told to the test, which fails on it
            answer = f"error {type(error).__name__}: {error}".replace("\n", " ")
        print(answer, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
