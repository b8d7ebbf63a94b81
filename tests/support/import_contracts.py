"""A contract type of our own for ``lint-imports`` (registered in .importlinter): the listed packages are clients
of the public surface only, so they may import another package's private module (``_name``) never."""

from __future__ import annotations

from typing import Any

from importlinter import Contract, ContractCheck, fields, output


def _private(module: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in module.split(".")[1:])


class PublicNamesContract(Contract):
    """Each module in ``source_modules`` (and below) imports, outside its own package, public modules only."""

    type_name = "public_names"
    source_modules = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        illegal = []
        for source in self.source_modules:  # type: ignore[attr-defined]
            inside = {source.name} | graph.find_descendants(source.name)
            for importer in sorted(inside):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if imported not in inside and _private(imported):
                        lines = [d["line_number"] for d in graph.get_import_details(importer=importer,
                                                                                   imported=imported)]
                        illegal.append((importer, imported, lines))
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error("These imports reach another package's private module; import the name from "
                           "the package (add it to its __all__) instead:", bold=False)
        output.new_line()
        for importer, imported, lines in check.metadata["illegal"]:
            output.print_error(f"- {importer} -> {imported} (l.{', '.join(map(str, lines))})", bold=False)
        output.new_line()
