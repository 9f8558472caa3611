"""The data model: what the atlas knows about a model, as frozen dataclasses of plain values.

Every stage fills it and render reads it. It imports neither torch, jinja2 nor the equations' printers; a formula is
a structure (atlas.document.equations), and LaTeX, KaTeX markup and translated sentences are made in render.
"""

from atlas.document.checkpoint_report import (
    WRAPPER,
    CheckpointReport,
    ComponentCheck,
    DtypeCount,
    Mismatch,
    TiedCopy,
    map_name,
)
from atlas.document.costs import Cost, CostSummary
from atlas.document.equations import (
    Equations,
    EquationStatus,
    Fact,
    Idiom,
    MathSymbol,
    PaperView,
    Step,
    Verification,
)
from atlas.document.model import (
    BufferRow,
    Component,
    CountedElsewhere,
    DimNames,
    ExpertLayers,
    ModelDoc,
    ParamRow,
    Published,
    Tag,
    Totals,
    calculation,
)
from atlas.document.sources import Claim, Excerpt, Source
from atlas.document.structure import Architecture, ClassUse, Flow, FlowNode, Trait
from atlas.document.tensor_shapes import Dim, Shapes, ShapeStatus, TensorShape

__all__ = ["Tag", "ParamRow", "calculation", "CountedElsewhere", "BufferRow", "Component", "Totals", "ExpertLayers",
           "Published",
           "DimNames", "ModelDoc", "Dim", "TensorShape", "ShapeStatus", "Shapes", "MathSymbol", "Step",
           "Verification", "EquationStatus", "Fact", "Idiom", "PaperView", "Equations", "Excerpt", "Source", "Claim",
           "Cost",
           "CostSummary", "Trait", "Architecture", "ClassUse", "FlowNode", "Flow", "Mismatch", "TiedCopy", "DtypeCount",
           "ComponentCheck", "CheckpointReport", "WRAPPER", "map_name"]
