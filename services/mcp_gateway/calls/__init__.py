"""The gateway's call path: who is calling (`caller`), whether they may (`admission`, pure), the
approval (`approval_gate`), one executor per kind (`mcp`, `http`, `platform`), the reply
(`replies`) and what is reported (`record`), in the order `pipeline` keeps for every caller."""
