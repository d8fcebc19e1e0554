"""The supervisor's relay between an app's stdio and NATS, for one generation of the app
(`stdio`): what the app answers is sent again when nats-server found no gateway listening
(`unheard`), a copy of a call the app had is answered again instead of run twice (`relayed`),
and an event is sent again until the gateway confirms it stored (`receipts`). The OS process
itself is `services.app_supervisor.process`."""
